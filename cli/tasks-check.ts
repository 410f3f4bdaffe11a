/**
 * `rollout tasks check SOURCE`: loads a task source as a batch would and runs its load-time
 * checks, then prints what it read (the format, and whether it was detected), the tasks loaded,
 * the unknown-field warnings and every failure. Exit status 0 when every task loads and passes, 1
 * otherwise.
 */
import { z } from 'zod';
import { checkTasks, formatFailure } from '../tasks/datasets/checks.js';
import { loadTaskReport, TASK_FORMATS, TaskLoadError } from '../tasks/loader.js';
import { LogParserSchema } from '../tasks/schema.js';
import { UsageError, type ParsedArgs } from './args.js';

const FormatSchema = z.enum(['auto', ...TASK_FORMATS]);

export async function tasksCheck(args: ParsedArgs, say: (line: string) => void): Promise<number> {
  const [, sub, source, ...rest] = args.positionals;
  if (sub !== 'check') throw new UsageError(`unknown tasks command ${JSON.stringify(sub ?? '')}; use check`);
  if (source === undefined || rest.length > 0) throw new UsageError('tasks check takes one task source');
  const format = FormatSchema.safeParse(args.format ?? 'auto');
  if (!format.success) throw new UsageError(`--format must be one of ${FormatSchema.options.join(', ')}`);
  const logParser = args.logParser === undefined ? undefined : LogParserSchema.safeParse(args.logParser);
  if (logParser && !logParser.success) {
    throw new UsageError(`--log-parser must be one of ${LogParserSchema.options.join(', ')}`);
  }
  const warnings: string[] = [];
  let report;
  try {
    report = await loadTaskReport(source, {
      format: format.data,
      warn: (w) => warnings.push(w),
      testCmd: args.testCmd,
      logParser: logParser?.data,
    });
  } catch (err) {
    if (!(err instanceof TaskLoadError)) throw err;
    say(`source:   ${source}`);
    say(`failures: 1 (the source does not load)`);
    say(`  ${err.message}`);
    return 1;
  }
  const failures = await checkTasks(report.tasks);
  say(`source:   ${report.path}`);
  say(`format:   ${report.format} (${report.detected ? 'detected' : 'given'})`);
  say(`tasks:    ${report.tasks.length} loaded`);
  say(`warnings: ${warnings.length}`);
  for (const w of warnings) say(`  ${w}`);
  say(`failures: ${failures.length}`);
  for (const f of failures) say(`  ${formatFailure(f)}`);
  return failures.length === 0 ? 0 : 1;
}
