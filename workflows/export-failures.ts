/**
 * Failure types the batch workflow reads from its activities (which import them from here: the
 * workflow bundle may not import activity code).
 */

/** The failure type `exportGroup` gives when rows are missing; its details name the episodes. */
export const GROUP_EXPORT_INCOMPLETE = 'GroupExportIncomplete';

/** Details of a `GroupExportIncomplete` failure. */
export interface GroupExportIncompleteDetails {
  missingEpisodeIds: string[];
}
