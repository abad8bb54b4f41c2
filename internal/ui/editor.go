package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// editor is the add/edit form. Every field is checked as it is typed, by
// the store's own validation, so the form and the config file never
// disagree about what is valid.
type editor struct {
	u        *UI
	original *store.Endpoint // nil when adding

	name      *widget.Entry
	url       *widget.Entry
	auth      *widget.Select
	headers   *widget.Entry
	allowHTTP *widget.Check
	form      *widget.Form
	message   *widget.Label
	saving    bool
	root      fyne.CanvasObject
}

var authChoices = []string{string(store.AuthNone), string(store.AuthBearer), string(store.AuthHeaders), string(store.AuthOAuth)}

// openEditor shows the form for a new endpoint (ep == nil) or for ep.
func (u *UI) openEditor(ep *store.Endpoint) {
	e := &editor{u: u, original: ep}
	e.name = widget.NewEntry()
	e.name.SetPlaceHolder("work")
	e.url = widget.NewEntry()
	e.url.SetPlaceHolder("https://example.com/mcp")
	e.auth = widget.NewSelect(authChoices, func(string) { e.revalidate() })
	e.headers = widget.NewMultiLineEntry()
	e.headers.SetPlaceHolder("X-Api-Key: keyring:apikey\nX-Team: ${TEAM}")
	e.headers.SetMinRowsVisible(3)
	e.allowHTTP = widget.NewCheck("Allow plain http to a non-loopback host", func(bool) { e.revalidate() })
	e.message = widget.NewLabel("")
	e.message.Wrapping = fyne.TextWrapWord
	e.message.Importance = widget.DangerImportance

	e.auth.SetSelected(string(store.AuthNone))
	if ep != nil {
		e.name.SetText(ep.Name)
		e.url.SetText(ep.URL)
		e.auth.SetSelected(string(ep.Auth))
		e.headers.SetText(formatHeaders(ep.Headers))
		e.allowHTTP.SetChecked(ep.Options.AllowHTTP)
	}
	e.name.Validator = func(string) error { return e.check("name") }
	e.url.Validator = func(string) error { return e.check("url") }
	e.headers.Validator = func(string) error { return e.check("headers") }
	// Enter in a one-line field saves, so the form works without a mouse.
	e.name.OnSubmitted = func(string) { e.submit() }
	e.url.OnSubmitted = func(string) { e.submit() }

	e.form = &widget.Form{
		Items: []*widget.FormItem{
			{Text: "Name", Widget: e.name, HintText: "Letters, digits, '.', '_' or '-'; AI clients list it under this name"},
			{Text: "URL", Widget: e.url, HintText: "The server's Streamable HTTP endpoint"},
			{Text: "Auth", Widget: e.auth, HintText: "bearer: a token stored in the keyring; headers: header values may use keyring:NAME"},
			{Text: "Headers", Widget: e.headers, HintText: "One \"Name: value\" per line"},
			{Text: "", Widget: e.allowHTTP},
		},
		SubmitText: "Save",
		OnSubmit:   e.submit,
		CancelText: "Cancel",
		OnCancel:   e.cancel,
	}
	title := "Add endpoint"
	if ep != nil {
		title = "Edit " + ep.Name
	}
	heading := widget.NewLabelWithStyle(title, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	e.root = container.NewVScroll(container.NewPadded(container.NewVBox(heading, e.form, e.message)))

	u.editing = e
	u.setRight(e.root)
	u.win.Canvas().Focus(e.name)
}

// values builds the endpoint the form describes. The ID and options the
// form does not show are kept from the original.
func (e *editor) values() (store.Endpoint, error) {
	var ep store.Endpoint
	if e.original != nil {
		ep = *e.original
	}
	ep.Name = strings.TrimSpace(e.name.Text)
	ep.URL = strings.TrimSpace(e.url.Text)
	ep.Auth = store.AuthKind(e.auth.Selected)
	ep.Options.AllowHTTP = e.allowHTTP.Checked
	h, err := parseHeaders(e.headers.Text)
	ep.Headers = h
	return ep, err
}

// check validates one field. Other fields are replaced by known-good
// values so a mistake is reported under the field that has it.
func (e *editor) check(field string) error {
	ep, herr := e.values()
	probe := store.Endpoint{Name: "x", ID: "x", URL: "https://example.com/mcp", Auth: store.AuthNone}
	switch field {
	case "name":
		probe.Name = ep.Name
		if err := probe.Validate(); err != nil {
			return errors.New(problem(err))
		}
		for _, other := range e.u.eps {
			if strings.EqualFold(other.Name, ep.Name) && (e.original == nil || other.ID != e.original.ID) {
				return fmt.Errorf("an endpoint named %q already exists", other.Name)
			}
		}
	case "url":
		probe.URL, probe.Options.AllowHTTP = ep.URL, ep.Options.AllowHTTP
		if err := probe.Validate(); err != nil {
			return errors.New(problem(err))
		}
	case "headers":
		if herr != nil {
			return herr
		}
		probe.Headers, probe.Auth = ep.Headers, ep.Auth
		if err := probe.Validate(); err != nil {
			return errors.New(problem(err))
		}
	}
	return nil
}

// problem is the part of a validation error that makes sense next to the
// field it concerns.
func problem(err error) string {
	var ve *store.ValidationError
	if errors.As(err, &ve) {
		if strings.HasPrefix(ve.Field, "headers.") {
			return ve.Field[len("headers."):] + ": " + ve.Problem
		}
		return ve.Problem
	}
	return err.Error()
}

// revalidate re-runs the checks that depend on other fields (auth and
// allow-http change what the URL and headers may be).
func (e *editor) revalidate() {
	if e.url == nil || e.headers == nil {
		return
	}
	e.url.Validate()
	e.headers.Validate()
}

// firstError is the first field error, for the message under the form.
func (e *editor) firstError() error {
	for _, f := range []string{"name", "url", "headers"} {
		if err := e.check(f); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

func (e *editor) submit() {
	if e.saving {
		return
	}
	if err := e.firstError(); err != nil {
		e.message.SetText(capitalize(err.Error()))
		return
	}
	ep, _ := e.values()
	e.saving = true
	e.message.SetText("Saving…")
	u := e.u
	st := u.opts.Store
	u.async(func() func() {
		ctx := context.Background()
		var saved store.Endpoint
		var err error
		if e.original == nil {
			saved, err = st.Add(ctx, ep)
		} else {
			id := e.original.ID
			saved, err = st.Update(ctx, id, func(p *store.Endpoint) error {
				p.Name, p.URL, p.Auth, p.Headers, p.Options.AllowHTTP = ep.Name, ep.URL, ep.Auth, ep.Headers, ep.Options.AllowHTTP
				return nil
			})
		}
		// Show the result now rather than when the watcher notices.
		cfg, lerr := st.Load()
		return func() {
			e.saving = false
			if err != nil {
				e.message.SetText(userText(err))
				return
			}
			u.log.Info("endpoint saved", "name", saved.Name)
			if u.editing == e {
				u.editing = nil
			}
			u.selected = ""
			if lerr == nil {
				u.setConfig(cfg, nil)
			}
			u.selectEndpoint(saved.ID)
		}
	})
}

func (e *editor) cancel() {
	u := e.u
	if u.editing != e {
		return
	}
	u.editing = nil
	u.refreshWindow()
}

// parseHeaders reads "Name: value" lines; blank lines are skipped.
func parseHeaders(text string) (map[string]string, error) {
	var h map[string]string
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("line %d: want \"Name: value\"", i+1)
		}
		if h == nil {
			h = map[string]string{}
		}
		k = strings.TrimSpace(k)
		if _, dup := h[k]; dup {
			return nil, fmt.Errorf("line %d: %s is given twice", i+1, k)
		}
		h[k] = strings.TrimSpace(v)
	}
	return h, nil
}

func formatHeaders(h map[string]string) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, h[k])
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// userText is the person-facing text of err.
func userText(err error) string {
	if msg, ok := store.UserMessage(err); ok {
		return msg
	}
	return capitalize(err.Error())
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
