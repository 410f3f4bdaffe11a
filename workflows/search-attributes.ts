import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Custom search attributes of episodes, shown and filterable in the Temporal UI. The dev server is
 * started with them registered; a production namespace registers them once (see README).
 */
export const BatchId = defineSearchAttributeKey('BatchId', SearchAttributeType.KEYWORD);
export const TaskId = defineSearchAttributeKey('TaskId', SearchAttributeType.KEYWORD);
export const AgentName = defineSearchAttributeKey('AgentName', SearchAttributeType.KEYWORD);
export const Outcome = defineSearchAttributeKey('Outcome', SearchAttributeType.KEYWORD);
export const Reward = defineSearchAttributeKey('Reward', SearchAttributeType.DOUBLE);
export const Turns = defineSearchAttributeKey('Turns', SearchAttributeType.INT);
export const Tokens = defineSearchAttributeKey('Tokens', SearchAttributeType.INT);

/** Name and type of each, as `temporal server start-dev --search-attribute NAME=TYPE` takes them. */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'Double' | 'Int'> = {
  BatchId: 'Keyword',
  TaskId: 'Keyword',
  AgentName: 'Keyword',
  Outcome: 'Keyword',
  Reward: 'Double',
  Turns: 'Int',
  Tokens: 'Int',
};
