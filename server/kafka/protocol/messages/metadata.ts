/**
 * Metadata (3), v0–8. For v1+ a null topic list means all topics and an empty one none; for v0 an
 * empty list means all.
 *
 *   request:  topics [name string] (nullable v1+), v4+ allow_auto_topic_creation bool,
 *             v8+ include_cluster_authorized_operations bool,
 *             v8+ include_topic_authorized_operations bool
 *   response: v3+ throttle_time_ms int32,
 *             brokers [node_id int32, host string, port int32, v1+ rack nullable_string],
 *             v2+ cluster_id nullable_string, v1+ controller_id int32,
 *             topics [error_code int16, name string, v1+ is_internal bool,
 *                     partitions [error_code int16, partition_index int32, leader_id int32,
 *                                 v7+ leader_epoch int32, replica_nodes [int32], isr_nodes [int32],
 *                                 v5+ offline_replicas [int32]],
 *                     v8+ topic_authorized_operations int32],
 *             v8+ cluster_authorized_operations int32
 */
import { array, f, type MessageSpec } from '../schema.js';

export const metadata: MessageSpec = {
  apiKey: 3, name: 'Metadata', minVersion: 0, maxVersion: 8, flexibleFrom: Infinity,
  request: [
    f('topics', array([f('name', 'string')], 1)),
    f('allow_auto_topic_creation', 'bool', 4),
    f('include_cluster_authorized_operations', 'bool', 8),
    f('include_topic_authorized_operations', 'bool', 8),
  ],
  response: [
    f('throttle_time_ms', 'int32', 3),
    f('brokers', array([
      f('node_id', 'int32'), f('host', 'string'), f('port', 'int32'),
      f('rack', 'nullable_string', 1),
    ])),
    f('cluster_id', 'nullable_string', 2),
    f('controller_id', 'int32', 1),
    f('topics', array([
      f('error_code', 'int16'),
      f('name', 'string'),
      f('is_internal', 'bool', 1),
      f('partitions', array([
        f('error_code', 'int16'),
        f('partition_index', 'int32'),
        f('leader_id', 'int32'),
        f('leader_epoch', 'int32', 7),
        f('replica_nodes', array('int32')),
        f('isr_nodes', array('int32')),
        f('offline_replicas', array('int32'), 5),
      ])),
      f('topic_authorized_operations', 'int32', 8),
    ])),
    f('cluster_authorized_operations', 'int32', 8),
  ],
};
