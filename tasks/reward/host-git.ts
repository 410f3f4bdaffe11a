/**
 * The host's git, run over the pristine base repository to turn the agent's changes into a diff.
 * Its environment is fixed: no system or global configuration, no hooks, no inherited `GIT_*`
 * variables, and the pristine repository's objects only as alternates, so every object written
 * goes to a scratch directory and the prepared layer is never changed.
 */
import { spawn } from 'node:child_process';
import type { Writable } from 'node:stream';

/**
 * Reading the agent's changes failed for a reason of the machinery (sandbox gone mid-read, host
 * I/O error, git failing on the pristine repository): trying again can help. Nothing the agent
 * did raises it.
 */
export class WorkspaceDiffError extends Error {
  override name = 'WorkspaceDiffError';
}

/** Git ran past its time: on the agent's data (its .gitignore rules) that is the agent's doing. */
export class HostGitTimeoutError extends WorkspaceDiffError {
  override name = 'HostGitTimeoutError';
}

export interface HostGitDirs {
  /** The pristine repository's `.git`, in the prepared layer; only read. */
  gitDir: string;
  /** Where new objects go (scratch). */
  objectDir: string;
  /** The index file (scratch). */
  indexFile: string;
  /** The work tree git is shown (scratch); never the agent's workspace. */
  workTree: string;
}

/** Pinned against anything an index or attributes could change about git's behaviour. */
const FIXED_CONFIG = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.quotePath', 'true'],
  // Only the checks of every platform: a name another file system would refuse is still a name here.
  ['core.protectNTFS', 'false'],
  ['core.protectHFS', 'false'],
].flatMap(([k, v]) => ['-c', `${k}=${v}`]);

const TIMEOUT_MS = 120_000;

export interface HostGitOptions {
  stdin?: Buffer;
  /** Exit codes that are answers rather than failures (check-ignore's 1: nothing ignored). */
  okCodes?: number[];
  /** The only attributes git reads. Default none (`/dev/null`). */
  attributesFile?: string;
  /** Stop reading at this many bytes of stdout: the result says `overflow`. Default unbounded. */
  maxStdout?: number;
  /** Another index than `dirs.indexFile`. */
  indexFile?: string;
  /** Default 120 s. */
  timeoutMs?: number;
}

export interface HostGitResult {
  code: number;
  stdout: Buffer;
  overflow: boolean;
}

/** Runs `git args`; a failure or a timeout is a WorkspaceDiffError. */
export function hostGit(
  dirs: HostGitDirs,
  args: string[],
  options: HostGitOptions = {},
): Promise<HostGitResult> {
  const run = startHostGit(dirs, args, options);
  run.stdin.end(options.stdin ?? Buffer.alloc(0));
  return run.done;
}

export interface RunningGit {
  stdin: Writable;
  done: Promise<HostGitResult>;
}

/** Starts `git args` for the caller to feed its stdin (and end it). */
export function startHostGit(
  dirs: HostGitDirs,
  args: string[],
  options: Omit<HostGitOptions, 'stdin'> = {},
): RunningGit {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: '/nonexistent',
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_DIR: dirs.gitDir,
    GIT_WORK_TREE: dirs.workTree,
    GIT_INDEX_FILE: options.indexFile ?? dirs.indexFile,
    GIT_OBJECT_DIRECTORY: dirs.objectDir,
    GIT_ALTERNATE_OBJECT_DIRECTORIES: `${dirs.gitDir}/objects`,
  };
  const argv = [
    ...FIXED_CONFIG,
    '-c',
    `core.attributesFile=${options.attributesFile ?? '/dev/null'}`,
    ...args,
  ];
  const child = spawn('git', argv, { cwd: dirs.workTree, env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.on('error', () => undefined);
  const done = new Promise<HostGitResult>((resolve, reject) => {
    const out: Buffer[] = [];
    let outBytes = 0;
    let overflow = false;
    let stderr = '';
    const timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new HostGitTimeoutError(`git ${args[0]} did not finish in ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      if (overflow) return;
      outBytes += chunk.length;
      out.push(chunk);
      if (options.maxStdout !== undefined && outBytes > options.maxStdout) {
        overflow = true;
        child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 4000) stderr += chunk.toString();
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new WorkspaceDiffError(`cannot run git: ${err.message}`, { cause: err }));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out);
      if (overflow) return resolve({ code: code ?? -1, stdout, overflow });
      if (code === 0 || (code !== null && (options.okCodes ?? []).includes(code)))
        return resolve({ code, stdout, overflow });
      reject(new WorkspaceDiffError(`git ${args[0]} failed (${code}): ${stderr.trim()}`));
    });
  });
  return { stdin: child.stdin, done };
}
