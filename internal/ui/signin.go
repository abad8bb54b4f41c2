package ui

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mcpbridge/mcpbridge/internal/auth"
	"github.com/mcpbridge/mcpbridge/internal/bridge"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

// OAuthSignIn signs one OAuth endpoint in and out; *auth.OAuth is one.
// Its methods may block on the keyring, the network and the browser.
type OAuthSignIn interface {
	Login(ctx context.Context) error
	Logout(ctx context.Context) error
	SignedIn(ctx context.Context) (bool, error)
}

// signInTimeout bounds "Sign in" as a whole, the browser included.
const signInTimeout = 5 * time.Minute

// Texts of the sign-in row.
const (
	textSignedIn    = "Signed in"
	textNotSignedIn = "Not signed in"
	textChecking    = "Checking the keyring…"
	textSigningIn   = "Finish signing in in your browser…"
	textSigningOut  = "Signing out…"
)

// newOAuth is the default Options.OAuth: the endpoint's own transport
// (proxy, CA file) with a total timeout, as the relay signs in, and the
// token set in the keyring. A new one per action reads the keyring afresh,
// so sign-ins and refreshes made by bridges are seen.
func (u *UI) newOAuth(ep store.Endpoint) (OAuthSignIn, error) {
	hc, err := bridge.NewHTTPClient(bridge.TransportOptions{CAFile: ep.Options.CAFile, DialTimeout: time.Duration(ep.Options.ConnectTimeout)})
	if err != nil {
		return nil, err
	}
	ahc := *hc
	ahc.Timeout = 30 * time.Second
	return auth.New(auth.Options{
		ServerURL:    ep.URL,
		HTTPClient:   &ahc,
		Logger:       u.log,
		Store:        auth.NewKeyringStore(u.opts.Store, ep.ID),
		EndpointName: ep.Name,
	}), nil
}

// selectedOAuth is the selected endpoint if it signs in with OAuth.
func (u *UI) selectedOAuth() (store.Endpoint, bool) {
	r, ok := u.selectedRow()
	if !ok || r.Endpoint.Auth != store.AuthOAuth {
		return store.Endpoint{}, false
	}
	return r.Endpoint, true
}

// checkSignIn shows whether the selected OAuth endpoint is signed in,
// asking the keyring off the Fyne thread. While a sign-in or sign-out of
// it runs, that is what it shows.
func (u *UI) checkSignIn() {
	u.signInGen++ // an answer for what was selected before is stale
	ep, ok := u.selectedOAuth()
	if !ok {
		return
	}
	w := u.w
	if text, busy := u.oauthBusy[ep.ID]; busy {
		w.signIn.Disable()
		w.signOut.Disable()
		w.signInState.SetText(text)
		return
	}
	w.signIn.Enable()
	w.signOut.Disable()
	w.signInState.SetText(textChecking)
	gen := u.signInGen
	newOAuth := u.opts.OAuth
	u.async(func() func() {
		var signedIn bool
		o, err := newOAuth(ep)
		if err == nil {
			signedIn, err = o.SignedIn(context.Background())
		}
		return func() {
			if u.signInGen != gen || u.selected != ep.ID {
				return // the person moved on, or signed in or out since
			}
			switch {
			case err != nil:
				w.signInState.SetText(userText(err))
			case signedIn:
				w.signOut.Enable()
				w.signInState.SetText(textSignedIn)
			default:
				w.signInState.SetText(textNotSignedIn)
			}
		}
	})
}

// signIn runs the browser sign-in of the selected endpoint off the Fyne
// thread.
func (u *UI) signIn() {
	ep, ok := u.selectedOAuth()
	if !ok {
		return
	}
	u.runOAuth(ep, textSigningIn, "Sign-in failed: ", func(o OAuthSignIn) (func(), error) {
		ctx, cancel := context.WithTimeout(context.Background(), signInTimeout)
		defer cancel()
		err := o.Login(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = &store.UserError{Msg: "Sign-in was not finished in the browser within 5 minutes.", Err: err}
		}
		if err != nil {
			return nil, err
		}
		return func() {
			u.w.signIn.Enable()
			u.w.signOut.Enable()
			u.w.signInState.SetText(textSignedIn)
		}, nil
	})
}

// signOut forgets the selected endpoint's tokens (off the Fyne thread).
func (u *UI) signOut() {
	ep, ok := u.selectedOAuth()
	if !ok {
		return
	}
	u.runOAuth(ep, textSigningOut, "Sign-out failed: ", func(o OAuthSignIn) (func(), error) {
		if err := o.Logout(context.Background()); err != nil {
			return nil, err
		}
		return func() {
			u.w.signIn.Enable()
			u.w.signOut.Disable()
			u.w.signInState.SetText(textNotSignedIn)
		}, nil
	})
}

// runOAuth runs a sign-in or sign-out of ep off the Fyne thread, showing
// busyText and keeping both buttons disabled until it ends; work returns
// the update for success, a failure is shown after failed. One runs per
// endpoint at a time.
func (u *UI) runOAuth(ep store.Endpoint, busyText, failed string, work func(OAuthSignIn) (func(), error)) {
	if _, busy := u.oauthBusy[ep.ID]; busy {
		return
	}
	u.oauthBusy[ep.ID] = busyText
	u.checkSignIn() // shows busyText and drops a check in flight
	newOAuth := u.opts.OAuth
	u.async(func() func() {
		o, err := newOAuth(ep)
		var done func()
		if err == nil {
			done, err = work(o)
		}
		if err != nil {
			u.log.Warn(strings.TrimSuffix(failed, ": "), "endpoint", ep.Name, "err", err)
		}
		return func() {
			delete(u.oauthBusy, ep.ID)
			if u.selected != ep.ID {
				return // shown when it is selected again
			}
			u.signInGen++
			if err != nil {
				// Whether a token is still held is unknown: offer both.
				u.w.signIn.Enable()
				u.w.signOut.Enable()
				u.w.signInState.SetText(failText(failed, err))
				return
			}
			done()
		}
	})
}

// failText is the person-facing text of a failed action: the store's or
// the sign-in's own message, else failed followed by the error.
func failText(failed string, err error) string {
	if msg, ok := store.UserMessage(err); ok {
		return msg
	}
	return failed + err.Error()
}
