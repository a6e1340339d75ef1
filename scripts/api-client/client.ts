// A player client written against the published contract: its types come
// from the served OpenAPI document (openapi-typescript, generated/api.d.ts)
// and every response is validated at run time by Ajv against the JSON
// Schemas the server publishes under /api/schemas. Sign-up and sign-in go
// through the unmodified better-auth client, as in the game's web client.
//
//   npx tsx client.ts http://127.0.0.1:8080 http://localhost:5173
//
// The second argument is the web client's origin, which the server must
// trust (PLATFORM_TRUSTED_ORIGINS). scripts/api-client.sh runs it all.
import assert from "node:assert/strict";
import { createAuthClient } from "better-auth/client";
import { inferAdditionalFields } from "better-auth/client/plugins";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import type { components } from "./generated/api.js";

type Schemas = components["schemas"];
type SchemaName = keyof Schemas;

const base = process.argv[2] ?? "http://127.0.0.1:8080";
const origin = process.argv[3] ?? base;
const started = performance.now();
let checks = 0;

// ---- the published JSON Schemas -------------------------------------------

const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
formats.default(ajv);

async function loadSchemas(): Promise<void> {
  const index = (await (await fetch(`${base}/api/schemas`)).json()) as Schemas["SchemaIndex"];
  await Promise.all(
    index.schemas.map(async ({ url }) => {
      const res = await fetch(base + url);
      assert.equal(res.headers.get("content-type"), "application/schema+json", url);
      ajv.addSchema((await res.json()) as object);
    }),
  );
  validate("SchemaIndex", index, "GET /api/schemas");
}

function validator(name: SchemaName): ValidateFunction {
  const v = ajv.getSchema(`/api/schemas/${name}.json`);
  assert.ok(v, `the server publishes no schema ${name}`);
  return v;
}

// validate checks body against the named schema and returns it typed.
function validate<N extends SchemaName>(name: N, body: unknown, what: string): Schemas[N] {
  const v = validator(name);
  if (!v(body)) {
    throw new Error(`${what}: the response is not a valid ${name}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(body)}`);
  }
  checks++;
  return body as Schemas[N];
}

// ---- one signed-in player ---------------------------------------------------

// Which published schema each better-auth route answers with.
const authSchemas: Record<string, SchemaName> = {
  "/sign-up/email": "TokenAndUser",
  "/sign-in/email": "SignInResponse",
  "/sign-out": "SignOutResult",
  "/get-session": "SessionAndUser",
};

class Player {
  readonly jar = new Map<string, string>();
  readonly auth;

  constructor(readonly nickname: string) {
    const mount = "/api/auth/player";
    this.auth = createAuthClient({
      baseURL: base,
      basePath: mount,
      // The server's user has a nickname; this plugin only adds the types.
      plugins: [inferAdditionalFields({ user: { nickname: { type: "string", required: true } } })],
      fetchOptions: {
        headers: { Origin: origin },
        onRequest: (ctx) => {
          ctx.headers.set("cookie", this.cookie());
          return ctx;
        },
        // The better-auth client revives dates, so its raw bodies are
        // checked here, before it does.
        onResponse: async (ctx) => {
          this.keepCookies(ctx.response.headers);
          const path = new URL(ctx.response.url).pathname.slice(mount.length);
          const name = authSchemas[path];
          const body: unknown = await ctx.response.clone().json();
          if (name && body !== null) validate(name, body, `POST ${mount}${path}`);
          else if (!ctx.response.ok) validate("Error", body, `${mount}${path}`);
        },
      },
    });
  }

  cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  keepCookies(headers: Headers): void {
    for (const line of headers.getSetCookie()) {
      const [pair = "", ...attrs] = line.split(";");
      const i = pair.indexOf("=");
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1);
      if (value === "" || attrs.some((a) => /max-age=0/i.test(a.trim()))) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  // call sends one API request and validates the answer: the named schema
  // for the expected status, the Error schema for any other.
  async call<N extends SchemaName>(method: string, path: string, want: { status: number[]; schema: N }, body?: unknown): Promise<Schemas[N]> {
    const res = await this.send(method, path, body);
    const json: unknown = await res.json();
    if (!want.status.includes(res.status)) {
      const err = validate("Error", json, `${method} ${path}`);
      throw new Error(`${method} ${path}: ${res.status} ${err.code}: ${err.message}`);
    }
    return validate(want.schema, json, `${method} ${path}`);
  }

  // fail sends a request that must be refused and returns the typed error.
  async fail(method: string, path: string, status: number, body?: unknown): Promise<Schemas["Error"]> {
    const res = await this.send(method, path, body);
    assert.equal(res.status, status, `${method} ${path}`);
    return validate("Error", await res.json(), `${method} ${path}`);
  }

  async send(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { Origin: origin, cookie: this.cookie() };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(base + path, { method, headers, body: body === undefined ? null : JSON.stringify(body) });
    this.keepCookies(res.headers);
    return res;
  }
}

// signUp creates a player through the better-auth client, signs out and
// back in, so the session in the jar comes from sign-in.
async function signUp(tag: string): Promise<Player> {
  const n = `${tag}_${Date.now().toString(36)}`;
  const p = new Player(n);
  const email = `${n}@example.com`;
  const password = "correct horse battery";
  let r = await p.auth.signUp.email({ name: `Client ${tag}`, email, password, nickname: n });
  assert.equal(r.error, null, JSON.stringify(r.error));
  assert.equal(r.data?.user.email, email);
  const out = await p.auth.signOut();
  assert.equal(out.data?.success, true);
  // A request type from the document: rememberMe is optional.
  const signIn: Schemas["SignInRequest"] = { email, password };
  r = await p.auth.signIn.email(signIn);
  assert.equal(r.error, null, JSON.stringify(r.error));
  const session = await p.auth.getSession();
  assert.equal(session.data?.user.nickname, n);
  return p;
}

// ---- the journey --------------------------------------------------------------

await loadSchemas();
const anon = new Player("anonymous");

// A refused sign-up names the field: details.fields is typed.
const refused = await anon.fail("POST", "/api/auth/player/sign-up/email", 400, {
  name: "Bad Email",
  email: "not-an-email",
  password: "correct horse battery",
  nickname: "bad_email",
} satisfies Schemas["SignUpRequest"]);
assert.equal(refused.code, "VALIDATION_ERROR");
assert.equal(typeof refused.details?.fields?.email, "string", JSON.stringify(refused));

const a = await signUp("ts_a");
const b = await signUp("ts_b");

const boot = await a.call("GET", "/api/player/bootstrap", { status: [200], schema: "Bootstrap" });
assert.equal(boot.user.nickname, a.nickname);
assert.ok(boot.decks.defaultValid, "a new player has a valid default deck");

const catalog = await anon.call("GET", "/api/content/catalog", { status: [200], schema: "Catalog" });
assert.equal(catalog.etag, boot.catalog.etag);

// Decks: import a published valid code that is not a starter deck, make it
// the default, and see a broken code refused with a typed reason.
const testing = await anon.call("GET", "/api/testing/legacy-tools", { status: [200], schema: "TestingMetadata" });
const starters = new Set(catalog.starterDecks.map((d) => d.code));
const vector = testing.deckCodeVectors.find((v) => v.expect === "valid" && !starters.has(v.code));
assert.ok(vector, "the testing metadata lists a valid deck code");
const importReq: Schemas["ImportDeckRequest"] = { code: vector.code, name: "From the client test" };
const imported = await a.call("POST", "/api/player/decks/import", { status: [200, 201], schema: "ImportDeckResult" }, importReq);
const def = await a.call("POST", "/api/player/decks/default", { status: [200], schema: "DefaultDeckResult" }, {
  deckId: imported.deck.id,
} satisfies Schemas["DefaultDeckRequest"]);
assert.equal(def.defaultDeckId, imported.deck.id);
const decks = await a.call("GET", "/api/player/decks", { status: [200], schema: "DeckList" });
assert.equal(decks.defaultDeckId, imported.deck.id);
const broken = await a.fail("POST", "/api/player/decks/import", 400, { code: "TD1-not-a-code" });
assert.equal(broken.code, "DECK_CODE_INVALID");
assert.ok(broken.details?.reason, "DECK_CODE_INVALID says why");

// Social: a asks b, b accepts.
const asked = await a.call("POST", "/api/player/social/actions", { status: [200], schema: "SocialActionResult" }, {
  action: "request",
  target: b.nickname,
} satisfies Schemas["SocialActionRequest"]);
assert.equal(asked.state, "outgoing");
const accepted = await b.call("POST", "/api/player/social/actions", { status: [200], schema: "SocialActionResult" }, {
  action: "accept",
  target: a.nickname,
});
assert.equal(accepted.state, "friend");
const social = await a.call("GET", "/api/player/social", { status: [200], schema: "Social" });
assert.deepEqual(social.friends.map((f) => f.player.nickname), [b.nickname]);
const again = await a.fail("POST", "/api/player/social/actions", 409, { action: "cancel", target: b.nickname });
assert.equal(again.code, "SOCIAL_INVALID_TRANSITION");
assert.ok(again.details?.allowedActions?.includes("remove"), JSON.stringify(again));

// Lobbies: a opens one for friends, b joins it by id and then sees it.
const queue = boot.queues.find((q) => q.enabled && q.partySize > 1);
assert.ok(queue, "an enabled queue for two or more");
const created = await a.call("POST", "/api/player/lobbies", { status: [201], schema: "LobbyResult" }, {
  queue: queue.id,
  visibility: "friends",
} satisfies Schemas["CreateLobbyRequest"]);
const lobby = created.lobby;
assert.ok(lobby, "the new lobby");
const twice = await a.fail("POST", "/api/player/lobbies", 409, { queue: queue.id, visibility: "public" });
assert.equal(twice.code, "LOBBY_ALREADY_MEMBER");
assert.equal(twice.details?.lobbyId, lobby.id);
const list = await b.call("GET", "/api/player/lobbies", { status: [200], schema: "LobbyList" });
assert.ok(list.lobbies.some((l) => l.id === lobby.id), "b sees a friend's lobby");
const joined = await b.call("POST", "/api/player/lobbies/join", { status: [200], schema: "LobbyResult" }, {
  lobbyId: lobby.id,
} satisfies Schemas["JoinLobbyRequest"]);
assert.equal(joined.lobby?.memberCount, 2);
const seen = await a.call("GET", `/api/player/lobbies/${lobby.id}`, { status: [200], schema: "Lobby" });
assert.deepEqual(seen.members.map((m) => m.player.nickname).sort(), [a.nickname, b.nickname].sort());

const ms = Math.round(performance.now() - started);
console.log(`api-client: ${checks} responses valid against the published schemas in ${ms} ms`);
