import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headerOfIncoming, headerOfRequest } from '../src/core/http/read-reply.js';
import { closeServer } from './helpers.js';

const NAMES = ['origin', 'accept', 'accept-encoding', 'if-none-match', 'x-request-id', 'x-forwarded-for', 'absent'];

/** Sends `head` as it is on a loopback socket and resolves with the answer's body. */
function send(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(head));
    socket.setTimeout(5000, () => socket.destroy(new Error('no answer')));
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer.slice(answer.indexOf('\r\n\r\n') + 4)));
  });
}

describe("Node's reading of request headers", () => {
  // Each answer says what both readings give for every name, as JSON.
  const app = new Hono().get('/', (c) => c.json(NAMES.map((name) => [name, headerOfIncoming(c, name), headerOfRequest(c, name)])));
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer(getRequestListener(app.fetch));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => closeServer(server));

  it.each([
    ['one of each', ['Origin: https://site.example', 'Accept: application/json', 'If-None-Match: "abc"', 'X-Request-Id: trace-1']],
    ['names in any case and spaces around values', ['oRiGiN:   https://site.example  ', 'ACCEPT-ENCODING:br']],
    ['a header sent twice', ['Accept-Encoding: gzip', 'Accept-Encoding: br;q=0.5', 'If-None-Match: "a"', 'If-None-Match: W/"b"']],
    ['empty values', ['Origin:', 'Accept:']],
    ['none at all', []],
  ])('answers as Hono does for %s', async (_name, lines) => {
    const head = `GET / HTTP/1.1\r\nHost: bff.example\r\n${lines.map((line) => `${line}\r\n`).join('')}Connection: close\r\n\r\n`;
    const answered = JSON.parse(await send(port, head)) as [string, string | null, string | null][];
    for (const [name, node, hono] of answered) expect([name, node]).toEqual([name, hono]);
    expect(answered.some(([, node]) => node !== null)).toBe(lines.length > 0);
  });
});
