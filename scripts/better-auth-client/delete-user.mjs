// Deletes accounts with the official better-auth client's deleteUser
// against a running platformctl without mail configured (so a password or
// a fresh session deletes at once).
//
//   npm ci && node delete-user.mjs http://127.0.0.1:8080 [trusted origin]
import { client as jarClient } from "./jar.mjs";
import assert from "node:assert/strict";

const base = process.argv[2] ?? "http://127.0.0.1:8080";
const origin = process.argv[3] ?? base; // a trusted origin of the server
const client = (base, mount) => jarClient(base, mount, [], origin).auth;
const n = Date.now().toString(36);
const password = "correct horse battery";

async function signUp(tag) {
  const a = client(base, "/api/auth/player");
  const email = `del-${tag}-${n}@example.com`;
  const r = await a.signUp.email({ name: "Delete Check", email, password, nickname: `del_${tag}_${n}` });
  assert.equal(r.error, null, JSON.stringify(r.error));
  return { a, email };
}

// With the password.
let { a, email } = await signUp("pw");
let r = await a.deleteUser({ password: "not the password" });
assert.equal(r.error.status, 400);
assert.equal(r.error.code, "INVALID_PASSWORD");
assert.notEqual((await a.getSession()).data, null, "a wrong password deletes nothing");
r = await a.deleteUser({ password });
assert.equal(r.error, null, JSON.stringify(r.error));
assert.deepEqual(r.data, { success: true, message: "User deleted" });
assert.equal((await a.getSession()).data, null, "the session ends with the account");
r = await client(base, "/api/auth/player").signIn.email({ email, password });
assert.equal(r.error.status, 401, "the deleted account cannot sign in");

// With a fresh session only.
({ a } = await signUp("fresh"));
r = await a.deleteUser();
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal(r.data.message, "User deleted");
r = await a.deleteUser();
assert.equal(r.error.status, 401, "nothing left to delete");

console.log(`better-auth deleteUser: every check passed against ${base}`);
