// Asks the engine it runs in about every probe of probes.json ({feature: {mode, wasm}}, the
// modules base64-encoded) and answers {feature: {ok, error}}: in Node as JSON on stdout
// (`node probe.js probes.json`), in a page served by prebake.link.browser through
// prebake.done(answers). See probes.toml for what each mode does.
"use strict";

function bytesOf(b64) {
  if (typeof Buffer !== "undefined") {
    return new Uint8Array(Buffer.from(b64, "base64"));
  }
  const text = atob(b64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    out[i] = text.charCodeAt(i);
  }
  return out;
}

async function ask(mode, bytes) {
  if (mode === "validate") {
    return WebAssembly.validate(bytes) ? null : "WebAssembly.validate: false";
  }
  if (mode === "jspi") {
    if (typeof WebAssembly.Suspending !== "function" || typeof WebAssembly.promising !== "function") {
      return `no JSPI API (WebAssembly.Suspending: ${typeof WebAssembly.Suspending}, ` +
             `WebAssembly.promising: ${typeof WebAssembly.promising})`;
    }
    const f = new WebAssembly.Suspending(() => new Promise((r) => setTimeout(() => r(41), 1)));
    const { instance } = await WebAssembly.instantiate(bytes, { m: { f } });
    const got = await WebAssembly.promising(instance.exports.g)();
    return got === 42 ? null : `the promising export answered ${got}, not 42`;
  }
  if (mode === "bigint") {
    const { instance } = await WebAssembly.instantiate(bytes);
    const got = instance.exports.f(41n);
    return got === 42n ? null : `f(41n) answered ${String(got)}, not 42n`;
  }
  if (mode === "threads") {
    if (!WebAssembly.validate(bytes)) {
      return "WebAssembly.validate: false";
    }
    const mem = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    if (typeof SharedArrayBuffer !== "function" || !(mem.buffer instanceof SharedArrayBuffer)) {
      return "a shared memory's buffer is no SharedArrayBuffer (not cross-origin isolated?)";
    }
    const { instance } = await WebAssembly.instantiate(bytes, { m: { mem } });
    instance.exports.f();
    const got = instance.exports.f();
    return got === 5 ? null : `the atomic add answered ${got}, not 5`;
  }
  return `unknown mode ${mode}`;
}

async function answers(probes) {
  const out = {};
  for (const [feature, probe] of Object.entries(probes)) {
    try {
      const error = await ask(probe.mode, bytesOf(probe.wasm));
      out[feature] = { ok: error === null, error };
    } catch (e) {
      out[feature] = { ok: false, error: `${e && e.name}: ${e && e.message}` };
    }
  }
  return out;
}

if (typeof window === "undefined") {
  const probes = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
  answers(probes).then((out) => process.stdout.write(JSON.stringify(out) + "\n"));
} else {
  fetch("probes.json").then((r) => r.json()).then(answers).then(prebake.done,
    (e) => prebake.fail(String(e)));
}
