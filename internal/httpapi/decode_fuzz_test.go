package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/towerdefence/platformctl/internal/admin"
	"github.com/towerdefence/platformctl/internal/lifecycle"
	"github.com/towerdefence/platformctl/internal/player"
)

// bodyDecoders is every request body the API decodes, by the type name
// used in decode[...]. TestFuzzCoversEveryDecoder keeps the list complete.
var bodyDecoders = map[string]func(*http.Request) error{
	"player.ImportDeckInput":   decodeOnly[player.ImportDeckInput],
	"defaultDeckRequest":       decodeOnly[defaultDeckRequest],
	"player.SocialActionInput": decodeOnly[player.SocialActionInput],
	"player.CreateLobbyInput":  decodeOnly[player.CreateLobbyInput],
	"joinLobbyRequest":         decodeOnly[joinLobbyRequest],
	"readyRequest":             decodeOnly[readyRequest],
	"kickRequest":              decodeOnly[kickRequest],
	"signUpRequest":            decodeOnly[signUpRequest],
	"signInRequest":            decodeOnly[signInRequest],
	"tokenRequest":             decodeOnly[tokenRequest],
	"emailRequest":             decodeOnly[emailRequest],
	"resetPasswordRequest":     decodeOnly[resetPasswordRequest],
	"admin.RevokeInput":        decodeOnly[admin.RevokeInput],
	"admin.IssueRequest":       decodeOnly[admin.IssueRequest],
	"reasonRequest":            decodeOnly[reasonRequest],
	"admin.SeedInput":          decodeOnly[admin.SeedInput],
	"admin.RoleInput":          decodeOnly[admin.RoleInput],
	"admin.PublishInput":       decodeOnly[admin.PublishInput],
	"admin.NewAdminInput":      decodeOnly[admin.NewAdminInput],
	"optionalBody":             decodeOnly[optionalBody],
	"confirmChangeRequest":     decodeOnly[confirmChangeRequest],
	"profileChangeRequest":     decodeOnly[profileChangeRequest],
	"passwordChangeRequest":    decodeOnly[passwordChangeRequest],
	"emailChangeRequest":       decodeOnly[emailChangeRequest],
	"lifecycle.DeleteRequest":  decodeOnly[lifecycle.DeleteRequest],
	"socialRequest":            decodeOnly[socialRequest],
	"unlinkRequest":            decodeOnly[unlinkRequest],
	"suspendRequest":           decodeOnly[suspendRequest],
	"passwordRequest":          decodeOnly[passwordRequest],
	"codeRequest":              decodeOnly[codeRequest],
	"passkeyResponseRequest":   decodeOnly[passkeyResponseRequest],
	"passkeyIDRequest":         decodeOnly[passkeyIDRequest],
}

func decodeOnly[T any](r *http.Request) error {
	_, err := decode[T](r)
	return err
}

// FuzzDecodeRequestBodies feeds arbitrary bodies and content types to
// every body decoder of the API, behind the body limit. Whatever arrives,
// decoding must not panic, and a refusal must render as a 4xx in the
// error model — never as a 500, which would mean an input the decoder
// did not anticipate.
func FuzzDecodeRequestBodies(f *testing.F) {
	for _, body := range []string{
		`{"code":"TD1-AAAA","name":"Rush","setDefault":true}`,
		`{"deckId":"00000000-0000-4000-8000-000000000000"}`,
		`{"action":"request","target":"someone"}`,
		`{"queue":"casual-short","visibility":"public"}`,
		`{"lobbyId":"00000000-0000-4000-8000-000000000000","code":"ABCD"}`,
		`{"ready":true}`,
		`{"playerId":"00000000-0000-4000-8000-000000000000"}`,
		`{"name":"Ada","nickname":"ada","callbackURL":"https://play.example.com/c"}`,
		`{"newEmail":"a@example.com","currentPassword":"x","newPassword":"y"}`,
		`{"token":"` + strings.Repeat("0f", 32) + `"}`, `{"token":12}`,
		`{"deckId":"0000000-0000-4000-8000-0000000000001"}`,
		`{"name":"Ada","nickname":"ada","email":"ada@example.com","password":"correct horse","rememberMe":false}`,
		`{"email":"ada@example.com","password":"x","callbackURL":"/lobby"}`,
		`{"token":"abc"}`, `{"newPassword":"long enough","token":"t"}`, `{"rememberMe":"yes"}`,
		`{"ready":"yes"}`, `{"setDefault":1}`, `{"lobbyId":null}`, `[]`, `null`, `{`, "\xff",
		`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		f.Add("application/json", []byte(body))
	}
	f.Add("text/plain", []byte(`{"ready":true}`))
	f.Add("application/merge-patch+json; charset=utf-8", []byte(`{"queue":"x"}`))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		for name, dec := range bodyDecoders {
			req := httptest.NewRequest(http.MethodPost, "/api/fuzz", bytes.NewReader(body))
			req.Header.Set("Content-Type", contentType)
			rec := httptest.NewRecorder()
			req.Body = http.MaxBytesReader(rec, req.Body, maxBodyBytes)
			err := dec(req)
			if err == nil {
				continue
			}
			respondErr(rec, req, log, err)
			if rec.Code < 400 || rec.Code >= 500 {
				t.Fatalf("%s: body %q (%s) answered %d: %s", name, body, contentType, rec.Code, rec.Body)
			}
			var e errorBody
			if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code == "" || e.Message == "" {
				t.Fatalf("%s: body %q: refusal is not in the error model: %s", name, body, rec.Body)
			}
		}
	})
}

// TestFuzzCoversEveryDecoder finds every decode[T] in this package and
// fails when FuzzDecodeRequestBodies does not fuzz T, so a new route's
// body cannot escape the fuzzer.
func TestFuzzCoversEveryDecoder(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	found := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			idx, ok := n.(*ast.IndexExpr)
			if !ok {
				return true
			}
			if id, ok := idx.X.(*ast.Ident); ok && id.Name == "decode" {
				var b strings.Builder
				if err := printExpr(&b, idx.Index); err == nil {
					found[b.String()] = true
				}
			}
			return true
		})
	}
	if len(found) == 0 {
		t.Fatal("found no decode[T] calls; the scan is broken")
	}
	for typ := range found {
		if bodyDecoders[typ] == nil {
			t.Errorf("decode[%s] is not in bodyDecoders: add it so FuzzDecodeRequestBodies covers it", typ)
		}
	}
	for typ := range bodyDecoders {
		if !found[typ] {
			t.Errorf("bodyDecoders lists %s, which no route decodes any more", typ)
		}
	}
}

func printExpr(b *strings.Builder, e ast.Expr) error {
	switch x := e.(type) {
	case *ast.Ident:
		b.WriteString(x.Name)
	case *ast.SelectorExpr:
		if err := printExpr(b, x.X); err != nil {
			return err
		}
		b.WriteString("." + x.Sel.Name)
	default:
		return errUnsupportedExpr
	}
	return nil
}

var errUnsupportedExpr = errors.New("unsupported type expression")
