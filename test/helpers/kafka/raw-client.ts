/**
 * A bare Kafka client over one socket for wire-level tests: sends any request the codec knows and
 * reads the answers in order (null once the server closed the connection).
 */
import net from 'node:net';
import { ApiKey } from '../../../server/kafka/protocol/api-keys.js';
import { decodeResponse, encodeRequest } from '../../../server/kafka/protocol/codec.js';
import { frame, FrameSplitter } from '../../../server/kafka/protocol/frame.js';
import type { Struct } from '../../../server/kafka/protocol/schema.js';

export class RawClient {
  private readonly splitter = new FrameSplitter();
  private readonly frames: Buffer[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  private correlation = 0;
  constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk) => {
      this.frames.push(...this.splitter.push(chunk));
      this.waiters.splice(0).forEach((w) => w());
    });
    socket.on('error', () => { /* seen as 'close' */ });
    socket.on('close', () => {
      this.closed = true;
      this.waiters.splice(0).forEach((w) => w());
    });
  }
  static async connect(port: number): Promise<RawClient> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawClient(socket);
  }
  send(apiKey: number, version: number, body: Struct): number {
    const correlation_id = this.correlation++;
    this.socket.write(frame(encodeRequest({ api_key: apiKey, api_version: version, correlation_id, client_id: 'raw' }, body)));
    return correlation_id;
  }
  async next(): Promise<Buffer | null> {
    while (this.frames.length === 0) {
      if (this.closed) return null;
      await new Promise<void>((r) => this.waiters.push(r));
    }
    return this.frames.shift()!;
  }
  async response(apiKey: number, version: number) {
    const payload = await this.next();
    if (payload === null) throw new Error('connection closed');
    return decodeResponse(apiKey, version, payload);
  }
  /** SASL PLAIN as `projectId` with `password` (an API key); throws if refused. */
  async authenticate(projectId: string, password: string): Promise<void> {
    this.send(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' });
    await this.response(ApiKey.SaslHandshake, 1);
    this.send(ApiKey.SaslAuthenticate, 1, { auth_bytes: Buffer.from(`\0${projectId}\0${password}`) });
    const auth = await this.response(ApiKey.SaslAuthenticate, 1);
    if (auth.body.error_code !== 0) throw new Error(auth.body.error_message);
  }
}
