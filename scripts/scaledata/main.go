// Command scaledata builds the production-sized data set of the scale
// benchmark (scripts/bench-scale.sh) in a PostgreSQL database, set-based,
// and writes the Cookie headers the load generator spreads its requests
// over. It reads the same PLATFORM_* settings as serve; run it with the
// server's database URL and secret.
//
//	PLATFORM_DATABASE_URL=postgres://… PLATFORM_SECRET=… go run ./scripts/scaledata -players 1000000 -cookies cookies.txt
//
// The cookie file holds the heavy social player first, then -spread players
// spread evenly over the id range. -admin-cookie writes an administrator's.
package main

import (
	"context"
	"crypto/md5"
	_ "embed"
	"encoding/hex"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/towerdefence/platformctl/fixtures"
	"github.com/towerdefence/platformctl/internal/account"
	"github.com/towerdefence/platformctl/internal/app"
	"github.com/towerdefence/platformctl/internal/auth"
	"github.com/towerdefence/platformctl/internal/config"
	"github.com/towerdefence/platformctl/internal/platform"
	"github.com/towerdefence/platformctl/internal/player"
	"github.com/towerdefence/platformctl/internal/role"
	"github.com/towerdefence/platformctl/internal/seed"
)

//go:embed data.sql
var dataSQL string

// Password is every generated player's password.
const Password = "scale-password"

func main() {
	players := flag.Int("players", 1_000_000, "players to generate (at least 2,000)")
	spread := flag.Int("spread", 20_000, "distinct players in the cookie file")
	cookies := flag.String("cookies", "cookies.txt", "file for the players' Cookie headers")
	adminCookie := flag.String("admin-cookie", "admin-cookie.txt", "file for an administrator's Cookie header")
	flag.Parse()
	if *players < 2000 || *spread < 1 || *spread >= *players {
		fmt.Fprintln(os.Stderr, "scaledata: -players must be at least 2000 and -spread between 1 and players-1")
		os.Exit(2)
	}
	if err := run(context.Background(), *players, *spread, *cookies, *adminCookie); err != nil {
		fmt.Fprintln(os.Stderr, "scaledata:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, players, spread int, cookieFile, adminFile string) error {
	cfg, err := config.Load(os.Getenv, map[string]string{"migrate": "true"})
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(ctx, cfg, log, platform.Build{Version: "scale"})
	if err != nil {
		return err
	}
	defer a.Close()
	set, ps := seed.Load(fixtures.FS())
	if len(ps) > 0 {
		return fmt.Errorf("fixtures: %v", ps)
	}
	if _, err := a.Seeder.Seed(ctx, set, seed.Options{}); err != nil {
		return err
	}
	hash, err := a.Accounts.HashPassword(ctx, Password)
	if err != nil {
		return err
	}
	template, err := templatePlayer(ctx, a, hash)
	if err != nil {
		return err
	}
	// The values are ours, so they are written into the statements: a
	// parameter a statement does not use would have no type.
	values := strings.NewReplacer("$1", strconv.Itoa(players), "$2", "'"+hash+"'", "$3", "'"+template.String()+"'::uuid")
	conn, err := a.DB.SQL().Conn(ctx) // one session: the first statement makes a temporary table
	if err != nil {
		return err
	}
	defer conn.Close()
	// The rows are consistent by construction; checking their foreign keys
	// row by row (triggers) would triple the load time. Needs a superuser.
	if _, err := conn.ExecContext(ctx, "SET session_replication_role = replica"); err != nil {
		return err
	}
	for i, stmt := range strings.Split(dataSQL, "\n--split\n") {
		stmt = values.Replace(withoutComments(stmt))
		start := time.Now()
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("statement %d: %w", i+1, err)
		}
		fmt.Fprintf(os.Stderr, "scaledata: statement %2d %6.1fs  %s\n", i+1, time.Since(start).Seconds(), firstLine(stmt))
	}
	if err := writeCookies(a, cookieFile, players, spread); err != nil {
		return err
	}
	return writeAdminCookie(ctx, a, hash, adminFile)
}

// templatePlayer signs up one player through the services, so that the
// generated players' starter decks are exactly what a real first visit
// gives.
func templatePlayer(ctx context.Context, a *app.App, hash string) (uuid.UUID, error) {
	now := a.Now().UTC()
	u := &account.User{ID: uuid.New(), Realm: account.RealmPlayer, Email: "template@scale.example.com", Name: "Template",
		Nickname: "scale-template", PasswordHash: hash, CreatedAt: now, UpdatedAt: now}
	if err := a.DB.Accounts().InsertUser(ctx, u); err != nil {
		return uuid.Nil, err
	}
	if _, err := a.Players.Bootstrap(ctx, player.Viewer{ID: u.ID, Nickname: u.Nickname, CreatedAt: now}); err != nil {
		return uuid.Nil, err
	}
	return u.ID, nil
}

// writeCookies writes the heavy player's Cookie header, then spread
// players' evenly over the id range; data.sql gives player i the session
// token md5("scale-<i>").
func writeCookies(a *app.App, path string, players, spread int) error {
	var b strings.Builder
	line := func(i int) {
		c := a.Auth.Cookies().SessionCookies(account.RealmPlayer, token(i), true)[0]
		fmt.Fprintf(&b, "%s=%s\n", c.Name, c.Value)
	}
	line(0)
	for j := range spread {
		line(1 + j*(players-1)/spread)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

func token(i int) string { return md5hex(fmt.Sprintf("scale-%d", i)) }

// writeAdminCookie creates an administrator with a session and a second
// factor (which production demands of administrators) and writes the
// Cookie header of the session the enrolment leaves.
func writeAdminCookie(ctx context.Context, a *app.App, hash, path string) error {
	now := a.Now().UTC()
	u := &account.User{ID: uuid.New(), Realm: account.RealmAdmin, Email: "admin@scale.example.com", Name: "Scale Admin",
		PasswordHash: hash, Role: string(role.Admin), CreatedAt: now, UpdatedAt: now}
	if err := a.DB.Accounts().InsertUser(ctx, u); err != nil {
		return err
	}
	client := auth.Client{UserAgent: "scaledata"}
	p, err := a.Auth.OpenSession(ctx, u, true, client)
	if err != nil {
		return err
	}
	if p, err = enrolTOTP(ctx, a, p, client); err != nil {
		return fmt.Errorf("enrol the administrator's second factor: %w", err)
	}
	c := a.Auth.Cookies().SessionCookies(account.RealmAdmin, p.Token, true)[0]
	return os.WriteFile(path, []byte(c.Name+"="+c.Value+"\n"), 0o600)
}

// enrolTOTP enrols an authenticator app for p's user with a code computed
// from the enrolment's URI, as the user's app would, and returns the
// session the confirmation opens.
func enrolTOTP(ctx context.Context, a *app.App, p *auth.Principal, client auth.Client) (*auth.Principal, error) {
	en, err := a.Auth.EnableTOTP(ctx, p, client, Password, "scaledata")
	if err != nil {
		return nil, err
	}
	uri, err := url.Parse(en.TOTPURI)
	if err != nil {
		return nil, err
	}
	code, err := totp.GenerateCodeCustom(uri.Query().Get("secret"), a.Now(),
		totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return nil, err
	}
	return a.Auth.VerifySecondFactor(ctx, p, client, auth.SecondFactorProof{Code: code})
}

// withoutComments drops the comment lines of stmt, whose $n would
// otherwise count as parameters.
func withoutComments(stmt string) string {
	var b strings.Builder
	for l := range strings.SplitSeq(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func firstLine(stmt string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(stmt), "\n")
	return l[:min(len(l), 60)]
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
