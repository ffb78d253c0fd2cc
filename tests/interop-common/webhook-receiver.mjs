// A real webhook receiver on 127.0.0.1, shared by the JS interop suites of every version
// (each loads its own @a2a-js/sdk release; this file needs only Node's standard library).

import { createServer } from 'node:http';
import { once } from 'node:events';

const TIMEOUT_MS = Number(process.env.A2A_INTEROP_HTTP_TIMEOUT ?? '30') * 1000;

/**
 * A minimal HTTP server on 127.0.0.1 that answers 200 `{}` to everything and hands each request
 * to whoever awaits `next()`.
 */
export class WebhookReceiver {
  #queue = [];
  #waiters = [];
  #server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end('{}');
      const push = {
        method: req.method,
        path: req.url,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const waiter = this.#waiters.shift();
      if (waiter) waiter(push);
      else this.#queue.push(push);
    });
  });

  async start() {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return this;
  }

  url(path) {
    return `http://127.0.0.1:${this.#server.address().port}${path}`;
  }

  /** The next request received, or a rejection after `ms`. */
  next(ms = TIMEOUT_MS) {
    if (this.#queue.length) return Promise.resolve(this.#queue.shift());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`no push received within ${ms} ms`));
      }, ms);
      const waiter = (push) => {
        clearTimeout(timer);
        resolve(push);
      };
      this.#waiters.push(waiter);
    });
  }

  async close() {
    this.#server.closeAllConnections();
    this.#server.close();
    await once(this.#server, 'close');
  }
}
