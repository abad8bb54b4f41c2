package ui

import (
	"fmt"
	"image/color"
	"strconv"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/layout"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/mcpbridge/mcpbridge/internal/clientconfig"
	"github.com/mcpbridge/mcpbridge/internal/store"
)

// widgets are the window's parts that change after build.
type widgets struct {
	list        *widget.List
	configErr   *widget.Label
	right       *fyne.Container // holds empty, detail or an editor
	empty       fyne.CanvasObject
	detail      fyne.CanvasObject
	addButton   *widget.Button
	title       *widget.Label
	url         *widget.Label
	state       *widget.Label
	bridges     *widget.Label
	activity    *widget.Label
	requests    *widget.Label
	lastError   *widget.Label
	edit        *widget.Button
	remove      *widget.Button
	test        *widget.Button
	testResult  *widget.Label
	oauth       fyne.CanvasObject // the sign-in row, shown for OAuth endpoints
	signIn      *widget.Button
	signOut     *widget.Button
	signInState *widget.Label
	creds       credsWidgets
	clientMsg   *widget.Label
	logText     *widget.Label
	logNote     *widget.Label
}

// Status dot colours.
var stateColors = map[store.State]color.Color{
	store.StateConnected:  color.NRGBA{0x2e, 0xa0, 0x43, 0xff}, // green
	store.StateIdle:       color.NRGBA{0x3b, 0x82, 0xf6, 0xff}, // blue
	store.StateConnecting: color.NRGBA{0xe3, 0xa0, 0x08, 0xff}, // amber
	store.StateError:      color.NRGBA{0xdc, 0x26, 0x26, 0xff}, // red
	StateNotRunning:       color.NRGBA{0x9c, 0xa3, 0xaf, 0xff}, // grey
}

func newDot() *canvas.Circle {
	c := canvas.NewCircle(stateColors[StateNotRunning])
	return c
}

func (u *UI) build() {
	w := &widgets{}
	u.w = w

	w.list = widget.NewList(
		func() int { return len(u.rows) },
		func() fyne.CanvasObject {
			dot := container.NewGridWrap(fyne.NewSquareSize(12), newDot())
			name := widget.NewLabelWithStyle("endpoint-name-template", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
			sum := widget.NewLabel("not running · 0 bridges")
			return container.NewBorder(nil, nil, container.NewCenter(dot), nil, container.NewVBox(name, sum))
		},
		func(id widget.ListItemID, o fyne.CanvasObject) {
			if id >= len(u.rows) {
				return
			}
			r := u.rows[id]
			b := o.(*fyne.Container)
			text := b.Objects[0].(*fyne.Container)
			dot := b.Objects[1].(*fyne.Container).Objects[0].(*fyne.Container).Objects[0].(*canvas.Circle)
			text.Objects[0].(*widget.Label).SetText(r.Endpoint.Name)
			text.Objects[1].(*widget.Label).SetText(r.Summary())
			dot.FillColor = stateColors[r.State]
			dot.Refresh()
		},
	)
	w.list.OnSelected = func(id widget.ListItemID) {
		if id < len(u.rows) {
			u.selectEndpoint(u.rows[id].Endpoint.ID)
		}
	}

	w.addButton = widget.NewButtonWithIcon("Add endpoint", theme.ContentAddIcon(), func() { u.openEditor(nil) })
	w.addButton.Importance = widget.HighImportance
	w.configErr = widget.NewLabel("")
	w.configErr.Importance = widget.DangerImportance
	w.configErr.Wrapping = fyne.TextWrapWord
	w.configErr.Hide()

	w.empty = container.NewCenter(widget.NewLabel("Add an endpoint (Ctrl+N), or select one on the left."))
	w.detail = u.buildDetail()
	w.right = container.NewStack(w.empty)

	left := container.NewBorder(container.NewPadded(w.addButton), nil, nil, nil, w.list)
	split := container.NewHSplit(left, w.right)
	split.Offset = 0.3
	u.win.SetContent(container.NewBorder(w.configErr, nil, nil, nil, split))
	u.win.Resize(fyne.NewSize(920, 640))

	// Keyboard: Ctrl+N adds, Tab moves between fields and buttons, the
	// list takes arrow keys and Space once focused (Ctrl+L).
	u.win.Canvas().AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyN, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { u.openEditor(nil) })
	u.win.Canvas().AddShortcut(&desktop.CustomShortcut{KeyName: fyne.KeyL, Modifier: fyne.KeyModifierShortcutDefault}, func(fyne.Shortcut) { u.win.Canvas().Focus(w.list) })
}

func (u *UI) buildDetail() fyne.CanvasObject {
	w := u.w
	w.title = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	w.title.SizeName = theme.SizeNameSubHeadingText
	w.url = widget.NewLabel("")
	w.url.Truncation = fyne.TextTruncateEllipsis
	w.state = widget.NewLabel("")
	w.bridges = widget.NewLabel("")
	w.activity = widget.NewLabel("")
	w.requests = widget.NewLabel("")
	w.lastError = widget.NewLabel("")
	w.lastError.Wrapping = fyne.TextWrapWord
	status := container.New(layout.NewFormLayout(),
		widget.NewLabel("State"), w.state,
		widget.NewLabel("Bridges"), w.bridges,
		widget.NewLabel("Last activity"), w.activity,
		widget.NewLabel("Requests relayed"), w.requests,
		widget.NewLabel("Last error"), w.lastError,
	)

	w.edit = widget.NewButtonWithIcon("Edit", theme.DocumentCreateIcon(), func() {
		if r, ok := u.selectedRow(); ok {
			ep := r.Endpoint
			u.openEditor(&ep)
		}
	})
	w.remove = widget.NewButtonWithIcon("Remove", theme.DeleteIcon(), u.confirmRemove)
	w.test = widget.NewButtonWithIcon("Test connection", theme.MediaPlayIcon(), u.testConnection)
	w.testResult = widget.NewLabel("")
	w.testResult.Wrapping = fyne.TextWrapWord
	w.signIn = widget.NewButtonWithIcon("Sign in", theme.LoginIcon(), u.signIn)
	w.signOut = widget.NewButtonWithIcon("Sign out", theme.LogoutIcon(), u.signOut)
	w.signInState = widget.NewLabel("")
	w.signInState.Wrapping = fyne.TextWrapWord
	w.oauth = container.NewBorder(nil, nil, container.NewHBox(w.signIn, w.signOut), nil, w.signInState)
	actions := container.NewHBox(w.edit, w.remove, w.test)

	creds := u.buildCreds()

	var copyButtons []fyne.CanvasObject
	for _, c := range clientconfig.Clients {
		copyButtons = append(copyButtons, widget.NewButtonWithIcon(clientconfig.DisplayName(c), theme.ContentCopyIcon(), func() { u.copyConfig(c) }))
	}
	install := widget.NewButton("Add to Claude Desktop", func() { u.installClient(clientconfig.Claude) })
	w.clientMsg = widget.NewLabel("")
	w.clientMsg.Wrapping = fyne.TextWrapWord
	clients := widget.NewCard("", "Connect an AI client", container.NewVBox(
		container.NewHBox(append([]fyne.CanvasObject{widget.NewLabel("Copy config for")}, copyButtons...)...),
		install,
		w.clientMsg,
	))

	w.logText = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Monospace: true})
	w.logText.Wrapping = fyne.TextWrapBreak
	w.logNote = widget.NewLabel("")
	w.logNote.Importance = widget.LowImportance
	w.logNote.Wrapping = fyne.TextWrapWord
	logScroll := container.NewVScroll(w.logText)
	logScroll.SetMinSize(fyne.NewSize(0, 160))
	logs := widget.NewCard("", "Log", container.NewBorder(w.logNote, nil, nil, nil, logScroll))

	body := container.NewVBox(
		w.title, w.url,
		status,
		actions, w.oauth, w.testResult,
		creds,
		clients,
		logs,
	)
	return container.NewVScroll(container.NewPadded(body))
}

// refreshWindow shows the current rows and the selected endpoint.
func (u *UI) refreshWindow() {
	w := u.w
	if u.configErr != nil {
		msg, ok := store.UserMessage(u.configErr)
		if !ok {
			msg = u.configErr.Error()
		}
		w.configErr.SetText("The config file cannot be used, so changes are not shown: " + msg)
		w.configErr.Show()
	} else {
		w.configErr.Hide()
	}
	w.list.Refresh()
	if i := u.rowIndex(u.selected); i >= 0 {
		w.list.Select(i)
	} else {
		w.list.UnselectAll()
	}
	if u.editing != nil {
		return
	}
	r, ok := u.selectedRow()
	if !ok {
		u.setRight(w.empty)
		return
	}
	u.setRight(w.detail)
	w.title.SetText(r.Endpoint.Name)
	w.url.SetText(r.Endpoint.URL)
	w.state.SetText(string(r.State))
	w.bridges.SetText(strconv.Itoa(r.Bridges))
	w.activity.SetText(ago(r.LastActivity, u.now()))
	w.requests.SetText(strconv.FormatInt(r.Requests, 10))
	lastErr := r.LastError
	if lastErr == "" {
		lastErr = "none"
	}
	w.lastError.SetText(lastErr)
	if r.Endpoint.Auth == store.AuthOAuth {
		w.oauth.Show()
		// Checked on selection, and again if the config changes which
		// server the endpoint signs in to.
		if key := r.Endpoint.ID + " " + r.Endpoint.URL; u.signInShown != key {
			u.signInShown = key
			u.checkSignIn()
		}
	} else {
		w.oauth.Hide()
		u.signInShown = ""
	}
}

func (u *UI) setRight(o fyne.CanvasObject) {
	if len(u.w.right.Objects) == 1 && u.w.right.Objects[0] == o {
		return
	}
	u.w.right.Objects = []fyne.CanvasObject{o}
	u.w.right.Refresh()
}

// selectEndpoint shows the endpoint with that id and starts the checks
// that must not run on the Fyne thread (keyring, log file).
func (u *UI) selectEndpoint(id string) {
	if u.selected == id && u.editing == nil {
		return
	}
	u.selected = id
	u.editing = nil
	u.w.testResult.SetText("")
	u.w.clientMsg.SetText("")
	u.signInShown = "" // check the sign-in again
	u.refreshWindow()
	u.resetCreds()
	u.loadLog()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
