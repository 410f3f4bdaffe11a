import { builtinPackDir, loadTasks, parseTaskSource } from '../tasks/loader.js';
import type { Task } from '../tasks/schema.js';

/** Task source name meaning the built-in pack. */
export const BUILTIN_TASKS = 'builtin';

/**
 * Where a task source lives on this host: the built-in pack's folder, or the source's path
 * without its format prefix (`swe-bench:/data/x.jsonl` → `/data/x.jsonl`).
 */
export function taskSourcePath(source: string): string {
  return source === BUILTIN_TASKS ? builtinPackDir() : parseTaskSource(source).path;
}

/**
 * Tasks by source and id, loaded once per worker. Workflows carry only the source path and the
 * task id; the task itself (problem statement, patches) never enters a Temporal payload.
 */
export class TaskCatalog {
  private readonly sources = new Map<string, Promise<Map<string, Task>>>();

  load(source: string): Promise<Map<string, Task>> {
    let tasks = this.sources.get(source);
    if (!tasks) {
      // The format prefix stays: the worker reads the source as the batch's start did.
      tasks = loadTasks(source === BUILTIN_TASKS ? builtinPackDir() : source).then(
        (list) => new Map(list.map((t) => [t.instance_id, t])),
      );
      // A failed load is not cached: the file may be fixed and the activity retried.
      tasks.catch(() => this.sources.delete(source));
      this.sources.set(source, tasks);
    }
    return tasks;
  }

  async get(source: string, taskId: string): Promise<Task> {
    const task = (await this.load(source)).get(taskId);
    if (!task) throw new Error(`task ${taskId} is not in ${source}`);
    return task;
  }
}
