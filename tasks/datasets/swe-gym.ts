/**
 * SWE-Gym rows (SWE-Gym/SWE-Gym, SWE-Gym/SWE-Gym-Lite): the SWE-bench row shape, over the
 * repositories of repo-tests.ts's SWE_GYM_REPOS, with no image field. Their images are
 * published as `xingyaoww/sweb.eval.x86_64.<id, "__" spelt "_s_", lower case>:latest` (as
 * OpenHands' SWE-Gym evaluation names them), with the repository at /testbed.
 */
import type { RowLocation } from '../load-error.js';
import type { DatasetOptions } from './options.js';
import type { UnknownFields } from './report.js';
import { mapSweBenchShape } from './swe-bench.js';

function sweGymImage(instanceId: string): string {
  return `xingyaoww/sweb.eval.x86_64.${instanceId.replaceAll('__', '_s_').toLowerCase()}:latest`;
}

export function mapSweGymRow(
  value: unknown,
  at: RowLocation,
  options: DatasetOptions,
  unknown: UnknownFields,
): Record<string, unknown> {
  return mapSweBenchShape('SWE-Gym', value, at, options, unknown, (row) => sweGymImage(row.instance_id));
}
