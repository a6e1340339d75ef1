// The official better-auth client (the version pinned in package.json)
// with a tiny cookie jar on its fetch hooks, since Node has none; the
// Origin header stands in for the browser's.
import { createAuthClient } from "better-auth/client";

export function client(base, mount) {
  const jar = new Map();
  return createAuthClient({
    baseURL: base,
    basePath: mount,
    fetchOptions: {
      headers: { Origin: base },
      onRequest(ctx) {
        if (jar.size) ctx.headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
        return ctx;
      },
      onResponse(ctx) {
        for (const line of ctx.response.headers.getSetCookie()) {
          const [pair, ...attrs] = line.split(";");
          const i = pair.indexOf("=");
          const name = pair.slice(0, i).trim(), value = pair.slice(i + 1);
          if (attrs.some((a) => /max-age=0/i.test(a.trim())) || value === "") jar.delete(name);
          else jar.set(name, value);
        }
      },
    },
  });
}
