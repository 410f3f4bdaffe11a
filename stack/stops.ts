/** Shutdown steps of a process part, run in reverse order of start. */
export class Stops {
  private readonly steps: (() => Promise<void>)[] = [];

  push(step: () => Promise<void>): void {
    this.steps.push(step);
  }

  /** Runs every step, newest first; a failing step is reported and does not stop the others. */
  async run(): Promise<void> {
    for (const step of this.steps.splice(0).reverse()) await step().catch((e: unknown) => console.error(`stop: ${(e as Error).message}`));
  }
}

/**
 * Builds a part with its own `Stops`: on success the part's `stop()` runs them, on failure
 * whatever had started is stopped before the error is passed on.
 */
export async function withStops<T extends object>(build: (stops: Stops) => Promise<T>): Promise<T & { stop(): Promise<void> }> {
  const stops = new Stops();
  try {
    return { ...(await build(stops)), stop: () => stops.run() };
  } catch (error) {
    await stops.run();
    throw error;
  }
}
