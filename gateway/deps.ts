import type { SessionManager } from './session/session-manager.js';
import type { TurnRunnerDeps } from './session/turn-runner.js';

/** What the protocol routes need. */
export interface GatewayDeps {
  sessions: SessionManager;
  turns: TurnRunnerDeps;
  /** Model name reported to clients when the request names none. */
  modelName: string;
  /** Where request-level warnings go (options the gateway ignores). */
  log: (line: string) => void;
}
