// Drives a running platformctl with the official better-auth client and
// its twoFactorClient plugin: enrolment, a sign-in that owes its second
// factor, the same 30-second step refused twice, backup codes used once,
// the attempt cap of a challenge, and disabling. Codes are computed here
// from the otpauth:// URI the server hands out, as an authenticator app
// would.
//
//   npm ci && node two-factor.mjs http://127.0.0.1:8080 [trusted origin]
import { createAuthClient } from "better-auth/client";
import { twoFactorClient } from "better-auth/client/plugins";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";

const base = process.argv[2] ?? "http://127.0.0.1:8080";
const origin = process.argv[3] ?? base;
const mount = "/api/auth/player";

// client is the official client with a tiny cookie jar on its fetch hooks
// (Node has none); redirects counts onTwoFactorRedirect calls.
const redirects = new Map();
function client() {
  const jar = new Map();
  const c = createAuthClient({
    baseURL: base,
    basePath: mount,
    plugins: [twoFactorClient({ onTwoFactorRedirect: () => redirects.set(jar, (redirects.get(jar) ?? 0) + 1) })],
    fetchOptions: {
      headers: { Origin: origin },
      onRequest(ctx) {
        if (jar.size) ctx.headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
        return ctx;
      },
      onResponse(ctx) {
        for (const line of ctx.response.headers.getSetCookie()) {
          const [pair, ...attrs] = line.split(";");
          const i = pair.indexOf("=");
          const name = pair.slice(0, i).trim(), value = pair.slice(i + 1);
          if (attrs.some((a) => /max-age=(0|-)/i.test(a.trim())) || value === "") jar.delete(name);
          else jar.set(name, value);
        }
      },
    },
  });
  return { c, jar };
}

// totp computes the RFC 6238 code (SHA-1, 6 digits, 30 s) of the URI's
// secret for the step `offset` steps from now.
function totp(uri, offset = 0) {
  const secret = new URL(uri).searchParams.get("secret");
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const ch of secret.replace(/=+$/, "")) bits += alphabet.indexOf(ch).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(Date.now() / 1000 / 30) + offset));
  const mac = createHmac("sha1", key).update(counter).digest();
  const at = mac[mac.length - 1] & 0xf;
  const n = (mac.readUInt32BE(at) & 0x7fffffff) % 1_000_000;
  return n.toString().padStart(6, "0");
}

const n = Date.now().toString(36);
const email = `tf-${n}@example.com`, password = "correct horse battery";
const { c: a } = client();
let r = await a.signUp.email({ name: "Two Factor", email, password, nickname: `tf_${n}` });
assert.equal(r.error, null, JSON.stringify(r.error));

r = await a.twoFactor.enable({ password: "wrong password" });
assert.equal(r.error.code, "INVALID_PASSWORD");
r = await a.twoFactor.enable({ password });
assert.equal(r.error, null, JSON.stringify(r.error));
const { totpURI, backupCodes } = r.data;
assert.match(totpURI, /^otpauth:\/\/totp\//);
assert.equal(backupCodes.length, 10);
const first = totp(totpURI);
r = await a.twoFactor.verifyTotp({ code: first });
assert.equal(r.error, null, "enrolment confirmed: " + JSON.stringify(r.error));
assert.equal((await a.getSession()).data.user.email, email, "the rotated session works");
await a.signOut();

// A password alone no longer opens a session.
const { c: b, jar: bJar } = client();
r = await b.signIn.email({ email, password });
assert.equal(r.error, null);
assert.equal(r.data.twoFactorRedirect, true);
assert.deepEqual(r.data.twoFactorMethods, ["totp"]);
assert.equal(redirects.get(bJar), 1, "onTwoFactorRedirect was called");
assert.equal((await b.getSession()).data, null, "no session before the second factor");
r = await b.twoFactor.verifyTotp({ code: first });
assert.equal(r.error.code, "INVALID_CODE", "the same step is accepted once");
r = await b.twoFactor.verifyTotp({ code: totp(totpURI, 1), trustDevice: true });
assert.equal(r.error, null, JSON.stringify(r.error));
assert.equal((await b.getSession()).data.user.email, email);

// A backup code works once.
const { c } = client();
assert.equal((await c.signIn.email({ email, password })).data.twoFactorRedirect, true);
r = await c.twoFactor.verifyBackupCode({ code: backupCodes[0] });
assert.equal(r.error, null, JSON.stringify(r.error));
const { c: d } = client();
assert.equal((await d.signIn.email({ email, password })).data.twoFactorRedirect, true);
r = await d.twoFactor.verifyBackupCode({ code: backupCodes[0] });
assert.equal(r.error.code, "INVALID_BACKUP_CODE");

// Five wrong codes spend the challenge.
for (let i = 0; i < 4; i++) assert.equal((await d.twoFactor.verifyTotp({ code: "000000" })).error.code, "INVALID_CODE");
r = await d.twoFactor.verifyTotp({ code: "000000" });
assert.equal(r.error.code, "TOO_MANY_ATTEMPTS_REQUEST_NEW_CODE");
r = await d.twoFactor.verifyTotp({ code: totp(totpURI, 1) });
assert.equal(r.error.code, "INVALID_TWO_FACTOR_COOKIE", "a spent challenge opens nothing");

r = await b.twoFactor.generateBackupCodes({ password });
assert.equal(r.data.backupCodes.length, 10);
r = await b.twoFactor.disable({ password });
assert.equal(r.data.status, true);
const { c: e } = client();
r = await e.signIn.email({ email, password });
assert.equal(r.error, null);
assert.equal(r.data.twoFactorRedirect, undefined, "no second factor after disable");
console.log("two-factor: the official twoFactorClient works against", base);
