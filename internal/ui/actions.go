package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"github.com/mcpbridge/mcpbridge/internal/clientconfig"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

// credsWidgets is the credentials card: which secret, a password field
// that only ever writes, and whether the keyring has it.
type credsWidgets struct {
	card   *widget.Card
	name   *widget.Select
	entry  *widget.Entry
	store  *widget.Button
	status *widget.Label
	none   *widget.Label
	form   fyne.CanvasObject
}

func (u *UI) buildCreds() fyne.CanvasObject {
	c := &u.w.creds
	c.name = widget.NewSelect(nil, func(string) { u.checkSecret() })
	c.entry = widget.NewPasswordEntry()
	c.entry.SetPlaceHolder("paste the secret; it is never shown again")
	c.store = widget.NewButton("Store in keyring", u.storeSecret)
	c.entry.OnSubmitted = func(string) { u.storeSecret() }
	c.status = widget.NewLabel("")
	c.status.Wrapping = fyne.TextWrapWord
	c.none = widget.NewLabel("")
	c.none.Wrapping = fyne.TextWrapWord
	c.form = container.NewVBox(
		container.NewBorder(nil, nil, widget.NewLabel("Secret"), nil, c.name),
		container.NewBorder(nil, nil, nil, c.store, c.entry),
	)
	c.card = widget.NewCard("", "Credentials", container.NewVBox(c.form, c.none, c.status))
	return c.card
}

// typedSecrets are the secrets of ep a person types in: OAuth token sets
// come from a sign-in, not from the keyboard.
func typedSecrets(ep store.Endpoint) []string {
	var out []string
	for _, n := range ep.SecretNames() {
		if n != store.SecretOAuth {
			out = append(out, n)
		}
	}
	return out
}

// resetCreds shows the credentials of the selected endpoint and asks the
// keyring, off the Fyne thread, which are stored.
func (u *UI) resetCreds() {
	c := &u.w.creds
	c.entry.SetText("")
	c.status.SetText("")
	r, ok := u.selectedRow()
	if !ok {
		return
	}
	names := typedSecrets(r.Endpoint)
	if len(names) == 0 {
		c.form.Hide()
		switch r.Endpoint.Auth {
		case store.AuthOAuth:
			c.none.SetText("OAuth endpoints get their tokens from signing in.")
		default:
			c.none.SetText("This endpoint uses no keyring secret. Choose auth bearer, or reference one in a header as keyring:NAME.")
		}
		c.none.Show()
		return
	}
	c.none.Hide()
	c.form.Show()
	c.name.Options = names
	c.name.Selected = "" // SetSelected below must fire even for the same name
	c.name.SetSelected(names[0])
}

// checkSecret shows whether the selected secret is stored. Only presence
// is read; the value never reaches a widget.
func (u *UI) checkSecret() {
	c := &u.w.creds
	r, ok := u.selectedRow()
	name := c.name.Selected
	if !ok || name == "" {
		return
	}
	id := r.Endpoint.ID
	c.status.SetText("Checking the keyring…")
	st := u.opts.Store
	u.async(func() func() {
		has, err := st.HasSecret(context.Background(), id, name)
		return func() {
			if u.selected != id || c.name.Selected != name {
				return // the person moved on
			}
			switch {
			case err != nil:
				c.status.SetText(userText(err))
			case has:
				c.status.SetText(fmt.Sprintf("%s: stored", name))
			default:
				c.status.SetText(fmt.Sprintf("%s: not stored", name))
			}
		}
	})
}

func (u *UI) storeSecret() {
	c := &u.w.creds
	r, ok := u.selectedRow()
	name, value := c.name.Selected, c.entry.Text
	if !ok || name == "" {
		return
	}
	if value == "" {
		c.status.SetText("Type or paste the secret first.")
		return
	}
	id := r.Endpoint.ID
	c.entry.SetText("") // the value lives in the keyring, not in the window
	c.store.Disable()
	c.status.SetText("Storing…")
	st := u.opts.Store
	u.async(func() func() {
		err := st.SetSecret(context.Background(), id, name, value)
		return func() {
			c.store.Enable()
			if u.selected != id {
				return
			}
			if err != nil {
				u.log.Warn("storing secret failed", "endpoint_id", id, "name", name, "err", err)
				c.status.SetText(userText(err))
				return
			}
			c.status.SetText(fmt.Sprintf("%s: stored", name))
		}
	})
}

// testConnection runs a probe off the Fyne thread and reports what the
// server said, or why it could not be reached.
func (u *UI) testConnection() {
	r, ok := u.selectedRow()
	if !ok {
		return
	}
	ep := r.Endpoint
	w := u.w
	w.test.Disable()
	w.testResult.SetText("Connecting to " + ep.URL + " …")
	probe := u.opts.Probe
	u.async(func() func() {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		res, err := probe(ctx, ep)
		return func() {
			w.test.Enable()
			if u.selected != ep.ID {
				return
			}
			if err != nil {
				w.testResult.SetText("Test failed: " + userText(err))
				return
			}
			name := res.ServerName
			if res.ServerVersion != "" {
				name += " " + res.ServerVersion
			}
			w.testResult.SetText(fmt.Sprintf("Connected to %s · protocol %s · %s · %s round trip",
				name, res.ProtocolVersion, plural(res.Tools, "tool", "tools"), res.RoundTrip.Round(time.Millisecond)))
		}
	})
}

// clientEntry is the launch entry an AI client needs for the selected
// endpoint.
func (u *UI) clientEntry(client string) (store.Endpoint, map[string]any, error) {
	r, ok := u.selectedRow()
	if !ok {
		return store.Endpoint{}, nil, errors.New("no endpoint selected")
	}
	exe, err := u.executable()
	if err != nil {
		return store.Endpoint{}, nil, fmt.Errorf("finding the mcpbridge binary: %w", err)
	}
	return r.Endpoint, clientconfig.ServerEntry(client, exe, r.Endpoint.Name, u.opts.ConfigDirEnv), nil
}

func (u *UI) copyConfig(client string) {
	ep, entry, err := u.clientEntry(client)
	if err != nil {
		u.w.clientMsg.SetText(userText(err))
		return
	}
	u.app.Clipboard().SetContent(string(clientconfig.Snippet(client, ep.Name, entry)))
	u.w.clientMsg.SetText(fmt.Sprintf("Copied the %s config for %s; paste it into the client's MCP settings.", clientconfig.DisplayName(client), ep.Name))
}

// installClient merges the entry into the client's config file, keeping
// everything else (and a .bak of the old file).
func (u *UI) installClient(client string) {
	ep, entry, err := u.clientEntry(client)
	if err != nil {
		u.w.clientMsg.SetText(userText(err))
		return
	}
	find := u.opts.ClientConfigPath
	msg := u.w.clientMsg
	msg.SetText("Updating the " + clientconfig.DisplayName(client) + " config…")
	u.async(func() func() {
		path, err := find(client)
		var added bool
		if err == nil {
			added, err = clientconfig.Install(path, ep.Name, entry)
		}
		return func() {
			if err != nil {
				msg.SetText(userText(err))
				return
			}
			verb := "Updated"
			if added {
				verb = "Added"
			}
			msg.SetText(fmt.Sprintf("%s %s in %s; restart %s to use it.", verb, ep.Name, path, clientconfig.DisplayName(client)))
		}
	})
}

func (u *UI) confirmRemove() {
	r, ok := u.selectedRow()
	if !ok {
		return
	}
	ep := r.Endpoint
	text := fmt.Sprintf("Remove %s and its stored secrets?", ep.Name)
	if r.Bridges > 0 {
		text += fmt.Sprintf("\n%s running it will stop.", plural(r.Bridges, "bridge", "bridges"))
	}
	dialog.ShowConfirm("Remove endpoint", text, func(ok bool) {
		if ok {
			u.removeEndpoint(ep)
		}
	}, u.win)
}

// removeEndpoint deletes the endpoint, then its secrets. A keyring that
// cannot be reached does not undo the removal; it is reported.
func (u *UI) removeEndpoint(ep store.Endpoint) {
	st := u.opts.Store
	u.async(func() func() {
		ctx := context.Background()
		_, err := st.Remove(ctx, ep.ID)
		var kerr error
		if err == nil {
			kerr = st.DeleteSecrets(ctx, ep)
		}
		cfg, lerr := st.Load()
		return func() {
			if err != nil {
				u.w.testResult.SetText("Remove failed: " + userText(err))
				return
			}
			if lerr == nil {
				u.setConfig(cfg, nil)
			}
			if kerr != nil {
				dialog.ShowInformation("Secrets not deleted", ep.Name+" was removed, but its secrets are still in the keyring: "+userText(kerr), u.win)
			}
		}
	})
}

// logTail is how much of a log file the window shows.
const logTail = 16 << 10

// loadLog shows the tail of the selected endpoint's log file.
func (u *UI) loadLog() {
	w := u.w
	r, ok := u.selectedRow()
	if !ok {
		return
	}
	path := u.logPath(r.Endpoint.Name)
	if path == "" {
		w.logNote.SetText("No log directory is configured.")
		w.logText.SetText("")
		return
	}
	id := r.Endpoint.ID
	u.async(func() func() {
		text, err := tailFile(path, logTail)
		return func() {
			if u.selected != id {
				return
			}
			switch {
			case errors.Is(err, os.ErrNotExist):
				w.logNote.SetText("No log yet: " + path + " appears when an AI client runs this endpoint.")
				w.logText.SetText("")
			case err != nil:
				w.logNote.SetText("Cannot read " + path + ": " + err.Error())
			default:
				w.logNote.SetText(path)
				w.logText.SetText(text)
			}
		}
	})
}

// tailFile returns at most n bytes from the end of the file, starting at
// a line boundary.
func tailFile(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := max(fi.Size()-n, 0)
	buf, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return "", err
	}
	s := string(buf)
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimRight(s, "\n"), nil
}
