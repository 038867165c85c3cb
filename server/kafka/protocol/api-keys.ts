/** Kafka API keys used by the listener, by their Kafka names. */
export const ApiKey = {
  Produce: 0,
  Fetch: 1,
  ListOffsets: 2,
  Metadata: 3,
  OffsetCommit: 8,
  OffsetFetch: 9,
  FindCoordinator: 10,
  JoinGroup: 11,
  Heartbeat: 12,
  LeaveGroup: 13,
  SyncGroup: 14,
  SaslHandshake: 17,
  ApiVersions: 18,
  InitProducerId: 22,
  SaslAuthenticate: 36,
} as const;
