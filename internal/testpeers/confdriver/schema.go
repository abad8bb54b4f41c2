package main

// jsonSchema is the part of a JSON Schema needed to make up values.
type jsonSchema struct {
	Type       any                    `json:"type"`
	Properties map[string]*jsonSchema `json:"properties"`
	Required   []string               `json:"required"`
	Default    any                    `json:"default"`
	Enum       []any                  `json:"enum"`
	Items      *jsonSchema            `json:"items"`
	OneOf      []struct {
		Const any `json:"const"`
	} `json:"oneOf"`
	AnyOf   []*jsonSchema `json:"anyOf"`
	Const   any           `json:"const"`
	Format  string        `json:"format"`
	Minimum *float64      `json:"minimum"`
}

// typeName returns the schema's type, the first non-null one of a list.
func (s *jsonSchema) typeName() string {
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		for _, e := range t {
			if n, ok := e.(string); ok && n != "null" {
				return n
			}
		}
	}
	if len(s.Properties) > 0 {
		return "object"
	}
	return ""
}

// sampleArgs makes up tool arguments: the required properties (and those
// with a default), each with its default or a plausible value.
func (s *jsonSchema) sampleArgs() map[string]any {
	args := map[string]any{}
	n := 0
	for _, name := range s.Required {
		p := s.Properties[name]
		if p == nil {
			p = &jsonSchema{}
		}
		n++
		args[name] = p.sample(n)
	}
	return args
}

// formContent fills an elicitation form: every property that has a default
// gets it (SEP-1034), and required ones without a default get a made-up value.
func (s *jsonSchema) formContent() map[string]any {
	content := map[string]any{}
	for name, p := range s.Properties {
		if p != nil && p.Default != nil {
			content[name] = p.Default
		}
	}
	for i, name := range s.Required {
		if _, ok := content[name]; ok {
			continue
		}
		p := s.Properties[name]
		if p == nil {
			p = &jsonSchema{}
		}
		content[name] = p.sample(i + 1)
	}
	return content
}

// sample returns a value that fits s; n varies numbers between properties.
func (s *jsonSchema) sample(n int) any {
	if s.Default != nil {
		return s.Default
	}
	if s.Const != nil {
		return s.Const
	}
	if len(s.Enum) > 0 {
		return s.Enum[0]
	}
	if len(s.OneOf) > 0 && s.OneOf[0].Const != nil {
		return s.OneOf[0].Const
	}
	if len(s.AnyOf) > 0 && s.AnyOf[0] != nil && s.typeName() == "" {
		return s.AnyOf[0].sample(n)
	}
	switch s.typeName() {
	case "number", "integer":
		if s.Minimum != nil && float64(n) < *s.Minimum {
			return *s.Minimum
		}
		return n
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return s.sampleArgs()
	case "null":
		return nil
	}
	switch s.Format {
	case "email":
		return "confdriver@example.com"
	case "uri":
		return "https://example.com/confdriver"
	case "date":
		return "2000-01-01"
	case "date-time":
		return "2000-01-01T00:00:00Z"
	}
	return "confdriver"
}
