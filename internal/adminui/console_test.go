package adminui_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/apitest"
	"github.com/towerdefence/platformctl/internal/audit"
)

// browser starts headless chromium, or skips when it is not installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1366, 900))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	return ctx
}

// artifacts is where screenshots go: $PLATFORM_TEST_ARTIFACTS, or the
// test's temporary directory.
func artifacts(t *testing.T) string {
	if dir := os.Getenv("PLATFORM_TEST_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// TestConsoleInBrowser signs in to the console in chromium, finds a player
// whose name is markup, revokes their sessions — their open event stream
// ends — and reads the audit entry naming the administrator. The player's
// name shows as text, and no page runs script.
func TestConsoleInBrowser(t *testing.T) {
	srv := apitest.New(t)
	support := srv.CreateAdminWithRole(t, "support")
	const evil = "<script>alert(1)</script>"
	player := srv.SignUpPlayerWith(t, account.NewUser{Email: "xss-" + strings.ToLower(support.User.ID.String()[:8]) + "@example.com",
		Name: evil, Nickname: "xss_" + support.User.ID.String()[:8], Password: apitest.DefaultPassword})
	stream, res := player.Client.OpenEvents("")
	if res != nil {
		t.Fatalf("open events: %d %s", res.Status, res.Body)
	}
	defer stream.Close()
	stream.NextOf(t, "snapshot", 10*time.Second)

	ctx := browser(t)
	dir := artifacts(t)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		for _, step := range steps {
			if _, err := chromedp.Run(ctx, step); err != nil {
				t.Fatalf("browser: %v (screenshots in %s)", err, dir)
			}
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("browser: text of %s: %v", sel, err)
		}
		return s
	}
	shot := func(name string) {
		t.Helper()
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("browser: screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scripts := func() int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int]("document.scripts.length"))
		if err != nil {
			t.Fatalf("browser: count scripts: %v", err)
		}
		return n
	}

	do(chromedp.Navigate(srv.URL+"/admin"), chromedp.WaitVisible(`input[name=email]`),
		chromedp.SendKeys(`input[name=email]`, support.User.Email), chromedp.SendKeys(`input[name=password]`, support.Password))
	shot("01-sign-in.png")
	do(chromedp.Submit(`input[name=password]`), chromedp.WaitVisible(`input[name=query]`),
		chromedp.SendKeys(`input[name=query]`, player.User.Nickname+"\n"), chromedp.WaitVisible(`tbody a`),
		chromedp.Click(`tbody a`), chromedp.WaitVisible(`input[name=reason]`))
	name := text(`table tr:nth-child(3) td`)
	nScripts := scripts()
	shot("02-player.png")
	do(chromedp.SendKeys(`input[name=reason]`, "stolen phone"), chromedp.Submit(`input[name=reason]`), chromedp.WaitVisible(`.notice`))
	notice := text(`.notice`)
	do(chromedp.Navigate(srv.URL+"/admin/audit?action=sessions.revoke"), chromedp.WaitVisible(`tbody`))
	auditText := text(`tbody`)
	shot("03-audit.png")
	if name != evil || nScripts != 0 {
		t.Errorf("the player's name shows as %q with %d script elements, want the text %q and none", name, nScripts, evil)
	}
	if !strings.Contains(notice, "Revoked 1 session") {
		t.Errorf("notice %q", notice)
	}
	stream.NextOf(t, "session.ended", 10*time.Second)
	stream.Ended(t, 10*time.Second)
	if !strings.Contains(auditText, "admin:"+support.User.ID.String()) || !strings.Contains(auditText, "stolen phone") {
		t.Errorf("the audit page does not name the administrator: %q", auditText)
	}
	entries, err := srv.App.Audit.List(t.Context(), audit.Filter{Action: "sessions.revoke", Target: player.User.ID.String()})
	if err != nil || len(entries) != 1 || entries[0].Actor != "admin:"+support.User.ID.String() {
		t.Fatalf("audit %+v %v", entries, err)
	}
	t.Logf("screenshots in %s", dir)
}
