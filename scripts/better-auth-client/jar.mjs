// A tiny cookie jar riding on the better-auth client's fetch hooks (Node
// has none); the Origin header stands in for the browser's.
import { createAuthClient } from "better-auth/client";

export function client(base, mount, plugins = [], origin = base) {
  const jar = new Map();
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const store = (response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const i = pair.indexOf("=");
      const name = pair.slice(0, i).trim(), value = pair.slice(i + 1);
      if (attrs.some((a) => /max-age=0/i.test(a.trim())) || value === "") jar.delete(name);
      else jar.set(name, value);
    }
  };
  const auth = createAuthClient({
    baseURL: base,
    basePath: mount,
    plugins,
    fetchOptions: {
      headers: { Origin: origin },
      onRequest(ctx) {
        if (jar.size) ctx.headers.set("cookie", cookieHeader());
        return ctx;
      },
      onResponse(ctx) {
        store(ctx.response);
      },
    },
  });
  // browse is a browser's GET of url with the jar, not following redirects.
  const browse = async (url) => {
    const res = await fetch(url, { redirect: "manual", headers: jar.size ? { cookie: cookieHeader() } : {} });
    store(res);
    return res;
  };
  return { auth, jar, browse };
}
