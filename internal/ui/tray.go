package ui

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"

	"fyne.io/fyne/v2"

	"github.com/mcpbridge/mcpbridge/internal/store"
)

// dotIcons are the tray menu's status dots. Tray hosts draw menu icons
// from PNG data, so they are rendered once here rather than from canvas
// objects.
var dotIcons = func() map[store.State]fyne.Resource {
	m := map[store.State]fyne.Resource{}
	for st, c := range stateColors {
		m[st] = fyne.NewStaticResource("dot-"+string(st)+".png", dotPNG(c))
	}
	return m
}()

// dotPNG draws a filled, anti-aliased circle on a transparent square.
func dotPNG(c color.Color) []byte {
	const size = 32
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	r, g, b, _ := c.RGBA()
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			dx, dy := float64(x)+0.5-size/2, float64(y)+0.5-size/2
			// Coverage falls off over one pixel at the rim.
			cov := 11.5 - math.Hypot(dx, dy)
			if cov <= 0 {
				continue
			}
			img.SetNRGBA(x, y, color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), uint8(255 * min(cov, 1))})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	return buf.Bytes()
}

// refreshTray rebuilds the tray menu's items in place: one per endpoint
// with its dot and bridge count, then Open and Quit.
func (u *UI) refreshTray() {
	var items []*fyne.MenuItem
	for _, r := range u.rows {
		id := r.Endpoint.ID
		label := r.Endpoint.Name + " — " + r.Summary()
		it := fyne.NewMenuItem(label, func() {
			u.Show()
			u.selectEndpoint(id)
		})
		it.Icon = dotIcons[r.State]
		items = append(items, it)
	}
	if len(items) == 0 {
		none := fyne.NewMenuItem("No endpoints yet", nil)
		none.Disabled = true
		items = append(items, none)
	}
	quit := fyne.NewMenuItem("Quit", func() { u.app.Quit() })
	quit.IsQuit = true
	items = append(items,
		fyne.NewMenuItemSeparator(),
		fyne.NewMenuItem("Open mcpbridge", u.Show),
		fyne.NewMenuItemSeparator(),
		quit,
	)
	u.trayMenu.Items = items
	u.trayMenu.Refresh()
}
