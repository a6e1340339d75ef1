// The official better-auth client with the official passkey plugin, as a
// web page would use them; the browser test drives it through window.
import { createAuthClient } from "better-auth/client";
import { passkeyClient } from "@better-auth/passkey/client";

window.makeClient = (basePath) =>
  createAuthClient({ baseURL: location.origin, basePath, plugins: [passkeyClient()] });
