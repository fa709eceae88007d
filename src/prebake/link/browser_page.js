// The page side of prebake.link.browser, served as /__prebake/page.js (a classic script, so
// a page can load it first, before anything it wants to watch). It hands everything back to
// the server that served it as ordered batches of events (one request in flight at a time, so
// they arrive in the order they happened) and gives the page `prebake.print`, `printErr`,
// `exit(code)` and `done(value)`. The main thread's console errors and warnings, uncaught
// errors and unhandled rejections become events too; the browser's own log carries every
// console line (workers' included) and is read by the server, not here.
//
// With a `program` in /__prebake/config.json it also starts an Emscripten program: `Module`
// takes its arguments, print/printErr/onExit/onAbort (Emscripten proxies those four from its
// pthreads to the main thread), writes the run's input files into the program's file system
// before main and posts the output files back after exit. The program is started as it was
// linked: a classic script that starts itself, one whose -sMODULARIZE factory (`factory`) is
// then called, or an ES module (-sEXPORT_ES6) whose default export is. A program linked
// without -sEXIT_RUNTIME=1 never calls onExit: its main's return (EXITSTATUS, a global of
// the classic script, after postRun) is its exit, as Emscripten's own Node loader makes it.
"use strict";
(() => {
  const queue = [];
  let seq = 0;
  let sending = false;

  function describe(value) {
    if (value instanceof Error) {
      return `${value.name}: ${value.message}`;
    }
    if (typeof WebAssembly.Exception === "function" && value instanceof WebAssembly.Exception) {
      return "uncaught WebAssembly.Exception (a wasm exception no handler caught)" +
             (value.stack ? `: ${String(value.stack).split("\n")[0]}` : "");
    }
    try {
      return typeof value === "string" ? value : String(value);
    } catch (e) {
      return Object.prototype.toString.call(value);
    }
  }

  async function flush() {
    while (queue.length) {
      const batch = queue.splice(0, 500);
      try {
        await fetch("/__prebake/events", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify(batch),
        });
      } catch (e) {
        queue.length = 0;  // the server is gone: nobody is listening any more
      }
    }
    sending = false;
  }

  function post(kind, data) {
    queue.push(Object.assign({ seq: seq++, kind }, data));
    if (!sending) {
      sending = true;
      setTimeout(flush, 5);
    }
  }

  for (const level of ["error", "warn"]) {
    const original = console[level].bind(console);
    console[level] = (...args) => {
      original(...args);
      post("console", { level, text: args.map(describe).join(" ") });
    };
  }
  addEventListener("error", (e) => post("error", { text: describe(e.error ?? e.message) }));
  addEventListener("unhandledrejection", (e) => post("error", { text: describe(e.reason) }));

  let exited = false;
  const prebake = {
    print: (text) => post("stdout", { text: String(text) }),
    printErr: (text) => post("stderr", { text: String(text) }),
    started: () => post("started", {}),
    exit: (code) => {
      if (!exited) {
        exited = true;
        post("exit", { code });
      }
    },
    abort: (what) => post("abort", { text: describe(what) }),
    done: (value) => post("done", { value }),
    returned: (code) => {
      if (!exited) {
        exited = code !== null;  // a hidden status: an exit may still follow (onExit)
        post("returned", { code });
      }
    },
    fail: (text) => post("error", { text: String(text) }),
  };
  globalThis.prebake = prebake;

  function base64(bytes) {
    let out = "";
    for (let i = 0; i < bytes.length; i += 0x8000) {
      out += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(out);
  }

  function fileSystem(M) {
    const fs = (M && M.FS) || globalThis.FS;
    if (!fs || typeof fs.writeFile !== "function") {
      throw new Error("the program has no file system to take its input and output files: " +
                      "link it with -sFORCE_FILESYSTEM=1 -sEXPORTED_RUNTIME_METHODS=FS");
    }
    return fs;
  }

  async function startProgram(config) {
    const inputs = await Promise.all(config.inputs.map(async (path, i) => {
      const reply = await fetch(`/__prebake/input/${i}`);
      return [path, new Uint8Array(await reply.arrayBuffer())];
    }));
    let M = null;
    const settings = {
      arguments: config.arguments,
      print: prebake.print,
      printErr: prebake.printErr,
      onAbort: prebake.abort,
      onRuntimeInitialized: prebake.started,
      onExit: (code) => {
        if (exited) {
          return;
        }
        try {
          const fs = config.outputs.length ? fileSystem(M) : null;
          for (const path of config.outputs) {
            let data = null;
            try {
              data = base64(fs.readFile(path));
            } catch (e) {
              prebake.printErr(`prebake: the program wrote no ${path}`);
            }
            post("output", { path, data });
          }
        } catch (e) {
          prebake.fail(describe(e));
        }
        prebake.exit(code);
      },
      postRun: [() => {
        // main returned (or called exit) and the runtime stays: linked without
        // -sEXIT_RUNTIME=1 (noExitRuntime), nothing will call onExit. EXITSTATUS is unset
        // when main only unwound (a main loop, emscripten_exit_with_live_runtime): it runs on.
        // A factory's program (-sMODULARIZE, -sEXPORT_ES6) keeps both inside: main is over,
        // with a status no one outside can read (null).
        const code = globalThis.EXITSTATUS;
        if (config.kind === "module" || config.factory) {
          prebake.returned(null);
        } else if (typeof code === "number" && globalThis.noExitRuntime !== false) {
          prebake.returned(code);
        }
      }],
      preRun: [(arg) => {
        M = arg || M;
        if (!inputs.length && !config.outputs.length) {
          return;
        }
        const fs = fileSystem(M);
        const folderOf = (path) => {  // the folder exists here: so it does there
          const slash = path.lastIndexOf("/");
          if (slash > 0) {
            fs.mkdirTree(path.slice(0, slash));
          }
        };
        for (const [path, bytes] of inputs) {
          folderOf(path);
          fs.writeFile(path, bytes);
        }
        config.outputs.forEach(folderOf);
      }],
    };
    if (config.kind === "module") {  // -sEXPORT_ES6: the default export is the factory
      const module = await import(config.program);
      M = await module.default(settings);
      return;
    }
    globalThis.Module = settings;
    M = settings;
    const script = document.createElement("script");
    script.src = config.program;
    script.onerror = () => prebake.fail(`${config.program} could not be loaded`);
    script.onload = () => {  // -sMODULARIZE: the script only defined its factory
      const factory = config.factory ? globalThis[config.factory] : null;
      if (typeof factory === "function") {
        Promise.resolve(factory(settings)).then((m) => { M = m; },
                                                (e) => prebake.fail(describe(e)));
      }
    };
    document.body.appendChild(script);
  }

  fetch("/__prebake/config.json").then((r) => r.json()).then((config) => {
    post("page", { isolated: globalThis.crossOriginIsolated === true,
                   shared_memory: typeof SharedArrayBuffer === "function" });
    if (config.program) {
      return startProgram(config);
    }
    return null;
  }).catch((e) => prebake.fail(describe(e)));
})();
