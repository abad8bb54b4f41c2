package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// browserEnv, set to 1, makes confdriver act as the user's web browser: it
// GETs each URL argument, following redirects, and exits. The driver sets it
// (with BROWSER pointing at itself) in the bridge's environment, so that a
// bridge that opens an authorization URL with $BROWSER completes the OAuth
// redirect to its loopback callback without a person (the conformance
// runner's authorization server approves at once).
const browserEnv = "CONFDRIVER_AS_BROWSER"

func actAsBrowser(urls []string, stderr io.Writer) int {
	client := &http.Client{Timeout: 20 * time.Second}
	code := 0
	for _, u := range urls {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				fmt.Fprintf(stderr, "confdriver (browser): %s -> %s %s\n", u, resp.Request.URL, resp.Status)
			}
		}
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "confdriver (browser): %s: %v\n", u, err)
			code = 1
		}
	}
	return code
}

// browserEnviron returns the bridge's environment: ours, plus BROWSER set
// to this executable in browser mode unless BROWSER is already set.
func browserEnviron() []string {
	env := os.Environ()
	if os.Getenv("BROWSER") != "" {
		return env
	}
	self, err := os.Executable()
	if err != nil {
		return env
	}
	return append(env, "BROWSER="+self, browserEnv+"=1")
}
