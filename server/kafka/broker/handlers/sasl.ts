/**
 * SASL PLAIN (RFC 4616): SaslHandshake v0/v1, SaslAuthenticate, and the bare token that follows a
 * v0 handshake. Username = project id; the password must be a key the listener's role accepts.
 * Authentication failure answers 58 (or closes, for a bare token) and closes the connection.
 */
import { KafkaError } from '../../protocol/errors.js';
import type { Struct } from '../../protocol/schema.js';
import { keyAllowed, type BrokerContext, type Session } from '../context.js';
import type { Handler } from './handler.js';

export const handleSaslHandshake: Handler = async (ctx, session, request) => {
  const mechanism = request.body.mechanism as string;
  if (session.handshakeVersion !== null || session.projectId !== null) {
    session.closeAfterResponse = true;
    return { error_code: KafkaError.ILLEGAL_SASL_STATE, mechanisms: ['PLAIN'] };
  }
  if (mechanism !== 'PLAIN') {
    return { error_code: KafkaError.UNSUPPORTED_SASL_MECHANISM, mechanisms: ['PLAIN'] };
  }
  session.handshakeVersion = request.header.api_version;
  return { error_code: KafkaError.NONE, mechanisms: ['PLAIN'] };
};

export const handleSaslAuthenticate: Handler = async (ctx, session, request) => {
  if (session.handshakeVersion !== 1 || session.projectId !== null) {
    session.closeAfterResponse = true;
    return authError(KafkaError.ILLEGAL_SASL_STATE, 'SaslAuthenticate without SaslHandshake v1');
  }
  const failure = authenticatePlain(ctx, session, request.body.auth_bytes as Buffer);
  if (failure !== null) {
    session.closeAfterResponse = true;
    return authError(KafkaError.SASL_AUTHENTICATION_FAILED, failure);
  }
  return {
    error_code: KafkaError.NONE, error_message: null, auth_bytes: Buffer.alloc(0),
    session_lifetime_ms: 0,
  };
};

function authError(code: number, message: string): Struct {
  return {
    error_code: code, error_message: message, auth_bytes: Buffer.alloc(0), session_lifetime_ms: 0,
  };
}

/**
 * An access key as a SASL password (docs/api.md §8): accepted by the inbound listener when active
 * and permitted `writes`; its autofill then goes into every event the connection produces.
 */
function accessKeyLogin(ctx: BrokerContext, session: Session, projectId: string, password: string): string | null {
  const access = ctx.engine.accessKeys.find(projectId, password);
  if (access === null) return `Invalid project id or key for project "${projectId}".`;
  if (ctx.role !== 'in' || !access.is_active || !access.permitted.includes('writes')) {
    return 'This access key may not use this listener (it needs "writes", is_active, and the inbound listener).';
  }
  session.projectId = projectId;
  session.keyKind = 'write';
  session.autofill = access.options.writes?.autofill;
  ctx.log(`kafka ${ctx.role}: ${session.remoteAddress} authenticated with an access key of project ${projectId}`);
  return null;
}

/** Checks a PLAIN token and sets the session's project; returns null or a failure message. */
export function authenticatePlain(
  ctx: BrokerContext, session: Session, token: Buffer,
): string | null {
  const parts = token.toString('utf8').split('\u0000');
  if (parts.length !== 3) return 'Malformed SASL/PLAIN token.';
  const [authzid, projectId, password] = parts as [string, string, string];
  if (authzid !== '' && authzid !== projectId) return 'The authorization id must be the username.';
  const kind = ctx.engine.projects.authenticate(projectId, password);
  if (kind === null) return accessKeyLogin(ctx, session, projectId, password);
  if (!keyAllowed(ctx.role, kind)) {
    return ctx.role === 'in'
      ? 'The inbound listener takes the project\'s Write Key (or Master Key).'
      : 'The outbound listener takes the project\'s Read Key (or Master Key).';
  }
  session.projectId = projectId;
  session.keyKind = kind;
  ctx.log(`kafka ${ctx.role}: ${session.remoteAddress} authenticated as project ${projectId}`);
  return null;
}
