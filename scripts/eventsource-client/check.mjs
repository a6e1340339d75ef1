// Drives a real `platformctl serve` with the eventsource client (the
// version pinned in package.json), the way a browser's EventSource does.
// It starts serve itself on the embedded SQLite database, so that it can
// also stop it with SIGTERM and watch the stream end within the drain.
//
//   npm ci && node check.mjs path/to/platformctl
import { EventSource } from "eventsource";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const bin = process.argv[2] ?? "platformctl";
const wait = 20_000;
const dataDir = mkdtempSync(join(tmpdir(), "platformctl-eventsource-"));

// freePort asks the kernel for a port nobody listens on.
function freePort() {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// startServe runs serve on a free port and resolves with its base URL,
// which is also its trusted origin.
async function startServe() {
  const addr = `127.0.0.1:${await freePort()}`;
  const child = spawn(bin, ["serve"], {
    env: { ...process.env, PLATFORM_ADDR: addr, PLATFORM_BASE_URL: `http://${addr}`, PLATFORM_DATA_DIR: dataDir,
      PLATFORM_EVENTS_HEARTBEAT: "200ms", PLATFORM_SHUTDOWN_TIMEOUT: "10s", PLATFORM_LOG_FORMAT: "json" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stderr.on("data", (chunk) => {
      buf += chunk;
      for (const line of buf.split("\n")) {
        if (!line.includes('"msg":"serving"')) continue;
        resolve({ child, base: `http://${addr}` });
      }
    });
    child.on("exit", (code) => reject(new Error(`serve exited with ${code}:\n${buf}`)));
  });
}

const { child, base } = await startServe();
child.stderr.resume();

// A player: a cookie jar over fetch, as a browser holds one.
async function signUp(tag) {
  const jar = new Map();
  const request = async (method, path, body) => {
    const res = await fetch(base + path, {
      method,
      headers: { Origin: base, "Content-Type": "application/json", Cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const i = pair.indexOf("=");
      jar.set(pair.slice(0, i).trim(), pair.slice(i + 1));
    }
    const text = await res.text();
    assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  const n = `${tag}${Date.now().toString(36)}`;
  const me = await request("POST", "/api/auth/player/sign-up/email",
    { email: `${n}@example.com`, password: "correct horse battery", name: n, nickname: n });
  // Each EventSource sends the jar's cookies; lastEventId, when given,
  // stands for a reconnect after the client saw that event.
  const events = (lastEventId) => new EventSource(base + "/api/player/events", {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers,
      Cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; "),
      ...(lastEventId ? { "Last-Event-ID": lastEventId } : {}) } }),
  });
  return { id: me.user.id, nickname: n, request, events };
}

// next resolves with the next event of type on es.
function next(es, type) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} event within ${wait} ms`)), wait);
    es.addEventListener(type, (ev) => { clearTimeout(timer); resolve({ id: ev.lastEventId, data: JSON.parse(ev.data) }); }, { once: true });
  });
}

try {
  const host = await signUp("h"), guest = await signUp("g");
  const es = guest.events();
  const snap = await next(es, "snapshot");
  assert.ok(snap.id, "the snapshot has an id");
  assert.equal(snap.data.lobby, null);

  const { lobby } = await host.request("POST", "/api/player/lobbies", { queue: "custom-hosted", visibility: "public" });
  let update = next(es, "lobby.updated");
  await guest.request("POST", "/api/player/lobbies/join", { lobbyId: lobby.id });
  let u = (await update).data;
  assert.equal(u.change, "member_joined");
  assert.equal(u.lobby.memberCount, 2);

  update = next(es, "lobby.updated");
  await host.request("POST", `/api/player/lobbies/${lobby.id}/ready`, { ready: true });
  u = (await update).data;
  assert.equal(u.change, "ready_changed");
  assert.ok(u.lobby.members.find((m) => m.player.id === host.id).ready);

  const social = next(es, "social.updated");
  await host.request("POST", "/api/player/social/actions", { action: "request", target: guest.nickname });
  const s = (await social).data;
  assert.equal(s.state, "incoming");
  assert.equal(s.player.id, host.id);

  // A reconnect with Last-Event-ID starts with a snapshot again.
  const again = guest.events(s.id ?? snap.id);
  const resnap = await next(again, "snapshot");
  assert.equal(resnap.data.lobby.id, lobby.id);
  assert.equal(resnap.data.social.counts.incoming, 1);
  again.close();

  // Signing out ends the stream with session.ended; the reconnect then
  // gets 401 and the client gives up.
  const ended = next(es, "session.ended");
  await guest.request("POST", "/api/auth/player/sign-out", {});
  assert.equal((await ended).data.reason, "signed_out");
  await new Promise((resolve) => { es.onerror = () => { if (es.readyState === EventSource.CLOSED) resolve(); }; });

  // SIGTERM: the open stream ends with stream.closed, and serve exits
  // cleanly within its drain time instead of waiting for the stream.
  const hs = host.events();
  await next(hs, "snapshot");
  const closed = next(hs, "stream.closed");
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const start = Date.now();
  child.kill("SIGTERM");
  assert.equal((await closed).data.reason, "shutdown");
  hs.close();
  assert.equal(await exited, 0);
  assert.ok(Date.now() - start < 10_000, "serve drained within its shutdown timeout");
  console.log("eventsource check passed");
} finally {
  child.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
}
