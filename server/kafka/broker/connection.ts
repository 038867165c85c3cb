/**
 * One client connection: splits frames (size-guarded before buffering), runs the SASL state
 * machine, and answers strictly in request order. Requests run one at a time, except that
 * consecutive Produce requests overlap (see dispatch). A parked long-poll Fetch or JoinGroup holds
 * back this connection only, as in Kafka.
 */
import type { Socket } from 'node:net';
import { ApiKey } from '../protocol/api-keys.js';
import { decodeRequest, encodeResponseFrame, UnsupportedVersionError } from '../protocol/codec.js';
import { KafkaError } from '../protocol/errors.js';
import { FrameSplitter } from '../protocol/frame.js';
import { apiVersions } from '../protocol/messages/index.js';
import type { BrokerContext, Session } from './context.js';
import { HANDLERS, PRE_AUTH_APIS } from './handlers/index.js';
import { authenticatePlain } from './handlers/sasl.js';
import { CONNECTION_QUEUE_MAX, PRODUCE_PIPELINE_MAX } from '../../common/limits.js';

const EMPTY_TOKEN_FRAME = Buffer.alloc(4);

export class Connection {
  private readonly splitter = new FrameSplitter();
  private readonly queue: Buffer[] = [];
  private busy = false;
  /** Resolves when every response started so far has been written, in order. */
  private written: Promise<void> = Promise.resolve();
  /** Requests started whose responses are not written yet. */
  private pending = 0;
  private readonly abort = new AbortController();
  readonly session: Session;

  constructor(private readonly ctx: BrokerContext, private readonly socket: Socket) {
    this.session = {
      remoteAddress: socket.remoteAddress ?? '', clientId: null, handshakeVersion: null,
      projectId: null, keyKind: null, closeAfterResponse: false, closed: false,
    };
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('close', () => this.onClose());
    socket.on('error', (error) => ctx.log(`kafka ${ctx.role}: socket error: ${error.message}`));
  }

  private onData(chunk: Buffer): void {
    let frames: Buffer[];
    try {
      frames = this.splitter.push(chunk);
    } catch (error) {
      this.ctx.log(`kafka ${this.ctx.role}: ${(error as Error).message}; closing`);
      this.socket.destroy();
      return;
    }
    for (const frame of frames) this.queue.push(frame);
    if (this.queue.length >= CONNECTION_QUEUE_MAX) this.socket.pause();
    void this.drain();
  }

  private onClose(): void {
    this.session.closed = true;
    this.queue.length = 0;
    this.abort.abort();
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      // Bounded by CONNECTION_QUEUE_MAX: the socket is paused while the queue is full.
      while (this.queue.length > 0 && !this.session.closed) {
        const frame = this.queue.shift()!;
        if (this.queue.length < CONNECTION_QUEUE_MAX) this.socket.resume();
        await this.dispatch(frame);
      }
    } finally {
      this.busy = false;
    }
  }

  /**
   * Produce requests pipeline: each starts (and calls the engine, in request order) before the
   * previous one is answered, so their fsyncs group; answers still go out in request order.
   * Any other request waits until every earlier answer is written, then runs alone.
   */
  private async dispatch(frame: Buffer): Promise<void> {
    const pipelined = this.session.projectId !== null && frame.length >= 2 &&
      frame.readInt16BE(0) === ApiKey.Produce;
    if (!pipelined || this.pending >= PRODUCE_PIPELINE_MAX) await this.written;
    const answer = this.handleFrame(frame);
    this.pending++;
    this.written = this.written.then(async () => {
      const response = await answer;
      this.pending--;
      if (response !== null) this.write(response);
      if (this.session.closeAfterResponse) this.socket.end();
    });
    if (!pipelined) await this.written;
  }

  /** Handles one frame; resolves to the response frame, or null for none. Never rejects. */
  private async handleFrame(payload: Buffer): Promise<Buffer | null> {
    const session = this.session;
    if (session.handshakeVersion === 0 && session.projectId === null) return this.rawToken(payload);
    let request;
    try {
      request = decodeRequest(payload);
    } catch (error) {
      return this.undecodable(error);
    }
    const { header } = request;
    session.clientId = header.client_id;
    const handler = HANDLERS.get(header.api_key);
    if (!handler || (session.projectId === null && !PRE_AUTH_APIS.has(header.api_key))) {
      this.ctx.log(`kafka ${this.ctx.role}: api ${header.api_key} before authentication; closing`);
      this.socket.destroy();
      return null;
    }
    let body;
    try {
      body = await handler(this.ctx, session, request, this.abort.signal);
    } catch (error) {
      const stack = (error as Error).stack;
      this.ctx.log(`kafka ${this.ctx.role}: api ${header.api_key} failed: ${stack}`);
      this.socket.destroy();
      return null;
    }
    if (body === null) return null;
    return encodeResponseFrame(header.api_key, header.api_version, header.correlation_id, body);
  }

  /** The SASL token after SaslHandshake v0: a bare frame, answered by a bare empty token. */
  private rawToken(token: Buffer): Buffer | null {
    const failure = authenticatePlain(this.ctx, this.session, token);
    if (failure !== null) {
      this.ctx.log(`kafka ${this.ctx.role}: SASL failed (${failure}); closing`);
      this.socket.destroy();
      return null;
    }
    return EMPTY_TOKEN_FRAME;
  }

  /** ApiVersions of an unknown version gets a v0 answer (KIP-511); anything else closes. */
  private undecodable(error: unknown): Buffer | null {
    if (error instanceof UnsupportedVersionError && error.header.api_key === ApiKey.ApiVersions) {
      const body = {
        error_code: KafkaError.UNSUPPORTED_VERSION,
        api_keys: [
          { api_key: ApiKey.ApiVersions, min_version: 0, max_version: apiVersions.maxVersion },
        ],
      };
      return encodeResponseFrame(ApiKey.ApiVersions, 0, error.header.correlation_id, body);
    }
    this.ctx.log(`kafka ${this.ctx.role}: bad request (${(error as Error).message}); closing`);
    this.socket.destroy();
    return null;
  }

  private write(frame: Buffer): void {
    if (!this.session.closed && !this.socket.destroyed) this.socket.write(frame);
  }

  destroy(): void {
    this.socket.destroy();
  }
}
