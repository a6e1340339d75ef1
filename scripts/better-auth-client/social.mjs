// Drives a running platformctl, configured with an OpenID Provider "op"
// (the zitadel/oidc example server and its test-user@localhost), with the
// official better-auth client: a guest from the anonymous plugin, then
// signIn.social's redirect step, the provider's login form, and the
// callback, which upgrades the guest in place.
//
//   node social.mjs http://127.0.0.1:8080
import { anonymousClient } from "better-auth/client/plugins";
import assert from "node:assert/strict";
import { client } from "./jar.mjs";

const base = process.argv[2] ?? "http://127.0.0.1:8080";
const { auth: a, browse } = client(base, "/api/auth/player", [anonymousClient()]);

let r = await a.signIn.anonymous();
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.user.isAnonymous, true);
assert.match(r.data.user.nickname, /^guest-/);
const guestId = r.data.user.id;

r = await a.signIn.anonymous();
assert.equal(r.error.code, "ANONYMOUS_USERS_CANNOT_SIGN_IN_AGAIN_ANONYMOUSLY");

r = await a.signIn.social({ provider: "nope" });
assert.equal(r.error.status, 404);
assert.equal(r.error.code, "PROVIDER_NOT_FOUND");

// The redirect step: the authorization URL with PKCE and a nonce.
r = await a.signIn.social({ provider: "op", callbackURL: "/play", newUserCallbackURL: "/welcome" });
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.redirect, true);
const authorize = new URL(r.data.url);
assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
assert.ok(authorize.searchParams.get("nonce"));

// The provider's login form, as a browser fills it in.
const op = (path) => new URL(path, authorize).toString();
let res = await fetch(authorize, { redirect: "manual" });
const login = new URL(op(res.headers.get("location")));
assert.match(await (await fetch(login)).text(), /name="password"/);
res = await fetch(op("/login/username"), {
  method: "POST",
  redirect: "manual",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({ id: login.searchParams.get("authRequestID"), username: "test-user@localhost", password: "verysecure" }),
});
res = await fetch(op(res.headers.get("location")), { redirect: "manual" });
const back = res.headers.get("location");
assert.ok(back.startsWith(`${base}/api/auth/player/callback/op?`), back);

// The callback, with the state cookie: the guest becomes the account.
res = await browse(back);
assert.equal(res.status, 302);
assert.equal(res.headers.get("location"), "/play");

r = await a.getSession();
assert.equal(r.error, null);
assert.equal(r.data.user.id, guestId, "the guest was upgraded in place");
assert.equal(r.data.user.isAnonymous, undefined);
assert.equal(r.data.user.email, "test-user@zitadel.ch");

r = await a.listAccounts();
assert.equal(r.error, null, JSON.stringify(r.error));
assert.deepEqual(r.data.map((x) => x.providerId), ["op"]);

r = await a.unlinkAccount({ accountId: r.data[0].id });
assert.equal(r.error.code, "FAILED_TO_UNLINK_LAST_ACCOUNT");

// The same callback again: the state was single-use.
res = await browse(back);
assert.equal(res.status, 302);
assert.match(res.headers.get("location"), /error=state_(not_found|mismatch)/);

// A second guest deletes itself with the plugin's deleteAnonymousUser.
const { auth: g } = client(base, "/api/auth/player", [anonymousClient()]);
r = await g.signIn.anonymous();
assert.equal(r.error, null, JSON.stringify(r.error));
r = await g.deleteAnonymousUser();
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.success, true);
r = await g.getSession();
assert.equal(r.data, null);

console.log("better-auth social and anonymous client: ok");
