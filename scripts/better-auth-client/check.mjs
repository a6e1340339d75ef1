// Drives a running platformctl with the official better-auth client (the
// version pinned in package.json), the way the web clients use it, with
// the cookie jar of jar.mjs.
//
//   npm ci && node check.mjs http://127.0.0.1:8080 [trusted origin]
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { client as jarClient } from "./jar.mjs";

const base = process.argv[2] ?? "http://127.0.0.1:8080";
const origin = process.argv[3] ?? base; // a trusted origin of the server

const client = (mount) => jarClient(base, mount, [], origin).auth;

const n = Date.now().toString(36);
const email = `ba-${n}@example.com`, password = "correct horse battery";
const a = client("/api/auth/player");

let r = await a.signUp.email({ name: "Client Check", email, password, nickname: `ba_${n}` });
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.user.email, email);
assert.ok(r.data.user.createdAt instanceof Date, "dates are revived");
const signUpToken = r.data.token;

r = await a.getSession();
assert.equal(r.error, null);
assert.equal(r.data.session.token, signUpToken);
assert.equal(r.data.user.nickname, `ba_${n}`);

r = await a.signOut();
assert.equal(r.data.success, true);
r = await a.getSession();
assert.equal(r.data, null, "no session after sign-out");
assert.equal(r.error, null);

r = await a.signIn.email({ email, password: "wrong password" });
assert.equal(r.error.status, 401);
assert.equal(r.error.code, "INVALID_EMAIL_OR_PASSWORD");

r = await a.signIn.email({ email: email.toUpperCase(), password });
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.redirect, false);

const b = client("/api/auth/player");
assert.equal((await b.signIn.email({ email, password })).error, null);
r = await a.listSessions();
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.length, 2);
const mine = (await a.getSession()).data.session.token;
const other = r.data.find((s) => s.token !== mine);
r = await a.revokeSession({ token: other.token });
assert.equal(r.data.status, true);
assert.equal((await b.getSession()).data, null, "revoked on the next request");

r = await a.updateUser({ name: "Mallory" });
assert.equal(r.error.status, 404);
assert.equal(r.error.code, "ACCOUNT_MUTATION_BLOCKED");
r = await a.changePassword({ currentPassword: password, newPassword: "another password" });
assert.equal(r.error.code, "ACCOUNT_MUTATION_BLOCKED");

r = await a.requestPasswordReset({ email, redirectTo: "/reset" });
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.status, true);

assert.equal((await b.signIn.email({ email, password })).error, null);
r = await a.revokeOtherSessions();
assert.equal(r.data.status, true);
assert.equal((await b.getSession()).data, null);
r = await a.revokeSessions();
assert.equal(r.data.status, true);
assert.equal((await a.getSession()).data, null);

// The admin mount knows nothing of players.
const admin = client("/api/auth/admin");
r = await admin.signIn.email({ email, password });
assert.equal(r.error.status, 401);

const { version } = JSON.parse(readFileSync(new URL("./node_modules/better-auth/package.json", import.meta.url)));
console.log(`better-auth client ${version}: every check passed against ${base}`);
