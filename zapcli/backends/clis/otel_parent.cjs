// zapcli: makes an agent CLI's own OpenTelemetry spans children of the span
// its TRACEPARENT names, for a Node CLI that exports spans but does not read
// TRACEPARENT itself (Gemini CLI, Qwen Code). Loaded with
// NODE_OPTIONS=--require <this file>; it touches nothing but the OpenTelemetry
// JS API's global registry (its documented cross-copy contract, shared by
// every bundled copy of the API): when the CLI registers its context manager
// and tracer provider, a span started in a context that holds no span (the
// active one, or ROOT_CONTEXT given explicitly) gets the remote parent.
// Without a valid TRACEPARENT it does nothing.
"use strict";
(function () {
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(
    String(process.env.TRACEPARENT || "").trim().toLowerCase());
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return;
  const parent = { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16) & 1, isRemote: true };
  const tracestate = process.env.TRACESTATE;
  if (tracestate) {
    parent.traceState = { get: () => undefined, set() { return this; }, unset() { return this; },
                          serialize: () => tracestate };
  }
  const remote = {  // a non-recording span: what the API's trace.wrapSpanContext makes
    spanContext: () => parent, isRecording: () => false,
    setAttribute() { return this; }, setAttributes() { return this; }, addEvent() { return this; },
    addLink() { return this; }, addLinks() { return this; }, setStatus() { return this; },
    updateName() { return this; }, end() {}, recordException() {},
  };
  const SPAN = Symbol.for("OpenTelemetry Context Key SPAN");
  const under = (ctx) =>  // a context without a span (ROOT_CONTEXT given explicitly too) gets the parent
    ctx && typeof ctx.getValue === "function" && !ctx.getValue(SPAN) ? ctx.setValue(SPAN, remote) : ctx;
  const withParent = (manager) => {
    if (!manager || typeof manager.active !== "function" || manager.__zapcliParent) return manager;
    const active = manager.active;
    manager.active = function () { return under(active.call(this)); };
    manager.__zapcliParent = true;
    return manager;
  };
  const tracerWithParent = (tracer) => {
    if (!tracer || tracer.__zapcliParent) return tracer;
    const { startSpan, startActiveSpan } = tracer;
    if (typeof startSpan === "function") {
      tracer.startSpan = function (name, options, ctx) {
        return startSpan.call(this, name, options, ctx === undefined ? ctx : under(ctx));
      };
    }
    if (typeof startActiveSpan === "function") {
      tracer.startActiveSpan = function (...args) {
        if (args.length >= 4) args[2] = under(args[2]);  // (name, options, context, fn)
        return startActiveSpan.apply(this, args);
      };
    }
    tracer.__zapcliParent = true;
    return tracer;
  };
  const providerWithParent = (provider) => {
    if (!provider || typeof provider.getTracer !== "function" || provider.__zapcliParent) return provider;
    const getTracer = provider.getTracer;
    provider.getTracer = function (...args) { return tracerWithParent(getTracer.apply(this, args)); };
    provider.__zapcliParent = true;
    return provider;
  };
  const hook = (api, type, wrap) => {
    if (Object.getOwnPropertyDescriptor(api, type)?.set) return;
    let current = wrap(api[type]);
    Object.defineProperty(api, type, { configurable: true, enumerable: true,
      get: () => current, set: (value) => { current = wrap(value); } });
  };
  const watch = (api) => {
    if (!api || typeof api !== "object") return api;
    hook(api, "context", withParent);  // spans started in the active context
    hook(api, "trace", providerWithParent);  // spans started in a context given explicitly
    return api;
  };
  for (const major of [1]) {
    const key = Symbol.for(`opentelemetry.js.api.${major}`);
    let api = watch(globalThis[key]);
    Object.defineProperty(globalThis, key, { configurable: true, enumerable: false,
      get: () => api, set: (value) => { api = watch(value); } });
  }
})();
