import type { FastifyInstance } from 'fastify';

/** Listens on `host:port` (0: any free port) and answers the URL it got. */
export async function listenUrl(app: FastifyInstance, host: string, port: number): Promise<string> {
  await app.listen({ host, port });
  const address = app.server.address();
  return `http://${host}:${typeof address === 'object' && address ? address.port : port}`;
}
