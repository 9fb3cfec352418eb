import { createServer, type AddressInfo, type Server } from 'node:net';

/** `count` distinct loopback ports, free at the time of asking: each is held until all are chosen. */
async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  for (let index = 0; index < count; index += 1) {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  }
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  return ports;
}

/** A loopback port free at the time of asking (Node-only suites and the e2e). */
export const freePort = async (): Promise<number> => (await freePorts(1))[0]!;

/** Two distinct ones: asked for one after the other, the second could be the first again. */
export async function twoFreePorts(): Promise<[number, number]> {
  const [first, second] = await freePorts(2);
  return [first!, second!];
}
