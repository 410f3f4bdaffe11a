/** Task queue of one host's sandboxes. */
export function hostQueueOf(taskQueue: string, hostId: string): string {
  return `${taskQueue}-host-${hostId}`;
}
