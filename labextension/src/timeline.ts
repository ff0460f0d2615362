/**
 * A session's activity timeline (`GET coze_lab/api/conversations/{id}/activity` or
 * `runs/{id}/activity`): messages, tool calls with their inputs and results, workflow
 * nodes, files written, with durations and token usage, oldest first.
 */
import { h } from './dom';

/** One entry of a timeline. */
export interface IActivityItem {
  kind: string;
  at_ms: number;
  title: string;
  detail: string;
  status: string;
  duration_ms: number | null;
  usage: Record<string, number> | null;
  chat_id: string | null;
  run_id: string | null;
  node_id: string | null;
  path: string | null;
}

/** A session's activity and run state. */
export interface IActivity {
  state: string;
  chat_id: string | null;
  run_id: string | null;
  usage: Record<string, number>;
  items: IActivityItem[];
}

/** What each run state reads as in a list. */
export const STATE_LABELS: Record<string, string> = {
  idle: 'new',
  running: 'running',
  waiting: 'waiting for you',
  done: 'done',
  failed: 'failed',
  canceled: 'canceled'
};

const KIND_LABELS: Record<string, string> = {
  chat: 'Chat',
  message: 'You',
  tool_call: 'Tool call',
  tool_result: 'Tool result',
  answer: 'Answer',
  run: 'Run',
  node: 'Node',
  question: 'Question',
  file: 'File'
};

const STATE_CLASS: Record<string, string> = {
  running: 'jp-mod-running',
  waiting: 'jp-mod-interrupted',
  done: 'jp-mod-succeeded',
  failed: 'jp-mod-failed'
};

/** A pill showing a session's run state. */
export function statePill(state: string, testid = 'coze-lab-session-state'): HTMLElement {
  return h(
    'span',
    { class: `jp-CozeLab-pill ${STATE_CLASS[state] ?? ''}`, testid, dataset: { state } },
    STATE_LABELS[state] ?? state
  );
}

function duration(ms: number | null): string {
  if (ms === null || ms === undefined) {
    return '';
  }
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function tokens(usage: Record<string, number> | null): string {
  const count = usage?.token_count ?? usage?.total_tokens;
  return count ? `${count} tok` : '';
}

/** The timeline as a list: offset from the first item, kind, title, duration, tokens,
 * and the detail (inputs, outputs, text) folded under each row. */
export function renderTimeline(activity: IActivity): HTMLElement {
  const start = activity.items.length ? activity.items[0].at_ms : 0;
  const total = tokens(activity.usage);
  const head = h(
    'div',
    { class: 'jp-CozeLab-timeline-head' },
    statePill(activity.state, 'coze-lab-timeline-state'),
    h('span', {}, `${activity.items.length} events`),
    total ? h('span', {}, total) : null
  );
  const rows = activity.items.map(item => {
    const offset = `+${((item.at_ms - start) / 1000).toFixed(1)}s`;
    const meta = [item.status, duration(item.duration_ms), tokens(item.usage)]
      .filter(Boolean)
      .join(' · ');
    const summary = h(
      'summary',
      {},
      h('span', { class: 'jp-CozeLab-timeline-at' }, offset),
      h('span', { class: 'jp-CozeLab-timeline-kind' }, KIND_LABELS[item.kind] ?? item.kind),
      h('span', { class: 'jp-CozeLab-timeline-title' }, item.title),
      meta ? h('span', { class: 'jp-CozeLab-timeline-meta' }, meta) : null
    );
    return h(
      'details',
      {
        class: `jp-CozeLab-timeline-item jp-mod-${item.kind}`,
        testid: 'coze-lab-timeline-item',
        dataset: { kind: item.kind, path: item.path ?? '', nodeId: item.node_id ?? '' }
      },
      summary,
      item.detail ? h('pre', {}, item.detail) : null
    );
  });
  return h('div', { class: 'jp-CozeLab-timeline', testid: 'coze-lab-timeline' }, head, ...rows);
}
