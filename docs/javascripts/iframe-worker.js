/* The site's search when it is opened from disk (file://, as the README says): Material's search runs in a
   Web Worker, and browsers refuse to start one from a file:// page. Under file:// only, Worker is replaced
   by this stand-in: the worker's script runs in a hidden iframe of the page (an about:blank frame shares the
   page's origin, and a <script src> may load a file), its postMessage and "message" events passed across
   asynchronously, as a worker's are. The search index itself comes in a script (the offline plugin's
   search/search_index.js), not a fetch, which file:// would refuse too.

   mkdocs-material's offline plugin would load a shim of this kind from unpkg.com; the site loads nothing from
   the network, and the plugin adds none when a polyfill's name contains "iframe-worker", hence this file's
   name. tests/test_docs.py searches the built site from file:// in a headless Chromium. */
(() => {
  if (location.protocol !== "file:") return;

  class FrameWorker extends EventTarget {
    constructor(url) {
      super();
      this.onmessage = this.onerror = null;
      this._queue = [];
      this._frame = document.createElement("iframe");
      this._frame.style.display = "none";
      document.documentElement.appendChild(this._frame);
      const scope = this._frame.contentWindow;
      // the worker's script calls postMessage(data) and listens for "message" on its global, the frame's window
      scope.postMessage = data => setTimeout(() => this._emit("message", new MessageEvent("message", {data})));
      const script = scope.document.createElement("script");
      script.onload = () => { const queued = this._queue; this._queue = null; queued.forEach(data => this.postMessage(data)); };
      script.onerror = () => this._emit("error", new ErrorEvent("error", {message: `cannot load ${url}`}));
      script.src = new URL(url, location.href).href;
      scope.document.head.appendChild(script);
    }

    postMessage(data) {
      if (this._queue) return void this._queue.push(data);   // the script is not loaded yet
      const scope = this._frame.contentWindow;
      setTimeout(() => scope.dispatchEvent(new scope.MessageEvent("message", {data})));
    }

    terminate() {
      this._frame.remove();
    }

    _emit(type, event) {
      if (typeof this["on" + type] === "function") this["on" + type](event);
      this.dispatchEvent(event);
    }
  }

  window.Worker = FrameWorker;
})();
