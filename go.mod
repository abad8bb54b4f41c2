module github.com/mcpbridge/mcpbridge

go 1.26.0

require (
	fyne.io/fyne/v2 v2.8.1 // indirect
	github.com/danieljoos/wincred v1.2.3 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/godbus/dbus/v5 v5.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	github.com/zalando/go-keyring v0.2.8 // indirect
	golang.org/x/oauth2 v0.38.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
