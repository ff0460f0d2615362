import { SplitPanel, Widget } from '@lumino/widgets';

import { requestAPI } from '../api';
import { inSpace } from '../space';
import { errorBox, h, markdown, showError, streamAPI } from '../dom';
import { ICozeLabPanel } from '../tokens';
import { IActivity, renderTimeline, STATE_LABELS, statePill } from '../timeline';

/** A bot as the studio API returns it (Coze's Bot object). */
export interface IBot {
  bot_id: string;
  name: string;
  description: string;
  version: string;
  /** connector id -> the published version it serves (empty: never published) */
  connectors?: Record<string, string>;
  prompt_info: { prompt: string };
  model_info: { model_id: string };
  variables: IVariableDefinition[];
}

/** A variable's definition, as a bot stores it. */
interface IVariableDefinition {
  keyword: string;
  default_value: string;
  description?: string;
  enable?: boolean;
  /** the end user may set it (here, `PUT /v1/variables`) */
  user_can_set?: boolean;
  /** the bot may set it (its save_variable tool, a workflow's assign node) */
  agent_can_set?: boolean;
}

/** A variable with your value (`GET coze_lab/api/bots/{id}/variables`). */
interface IVariableState extends IVariableDefinition {
  value: string;
  /** 0: never set (the value is the default) */
  update_time: number;
}

/** A Playground conversation (`GET coze_lab/api/bots/{id}/conversations`). */
interface IConversation {
  id: string;
  name?: string;
  created_at: number;
  updated_at?: number;
  last_section_id: string;
  /** run state: idle, running, waiting, done, failed, canceled */
  state?: string;
  /** the newest chat (the one a reloaded page re-attaches to while it runs) */
  chat_id?: string | null;
}

/** Where the open chat is kept so a reloaded page comes back to it. */
const OPEN_CHAT_KEY = 'coze-lab:open-chat';
/** How often a re-attaching stream that broke off is tried again. */
const REATTACH_TRIES = 5;

function rememberChat(botId: string, conversationId: string): void {
  try {
    window.localStorage.setItem(
      OPEN_CHAT_KEY,
      JSON.stringify({ bot_id: botId, conversation_id: conversationId })
    );
  } catch {
    /* storage unavailable: nothing to restore after a reload */
  }
}

function rememberedChat(): { bot_id: string; conversation_id: string } | null {
  try {
    return JSON.parse(window.localStorage.getItem(OPEN_CHAT_KEY) || 'null');
  } catch {
    return null;
  }
}

/** A stored message (`GET coze_lab/api/conversations/{id}/messages`). */
interface IMessage {
  id: string;
  section_id: string;
  role: string;
  type: string;
  content: string;
  created_at: number;
}

/** Messages per page when loading a conversation's history. */
const HISTORY_PAGE = 50;
/** At most this many pages of history are loaded. */
const HISTORY_PAGES = 40;

function conversationLabel(c: IConversation): string {
  const when = new Date((c.updated_at || c.created_at) * 1000).toLocaleString();
  const state = c.state && c.state !== 'idle' ? `[${STATE_LABELS[c.state] ?? c.state}] ` : '';
  return state + (c.name ? `${c.name} · ${when}` : `#${c.id.slice(-6)} · ${when}`);
}

function variablesText(bot: IBot | null): string {
  return (bot?.variables ?? []).map(v => `${v.keyword}=${v.default_value}`).join('\n');
}

/** `name=default` lines; the other fields of a variable the bot had (description, who
 * may set it) are kept. */
function parseVariables(text: string, before: IVariableDefinition[] = []): IVariableDefinition[] {
  const known = new Map(before.map(v => [v.keyword, v]));
  return text
    .split('\n')
    .map(line => line.trim())
    .filter(Boolean)
    .map(line => {
      const cut = line.indexOf('=');
      const keyword = (cut < 0 ? line : line.slice(0, cut)).trim();
      const value = cut < 0 ? '' : line.slice(cut + 1).trim();
      return { ...known.get(keyword), keyword, default_value: value };
    });
}

const CONNECTOR_NAMES: Record<string, string> = { '1024': 'API', '999': 'Web SDK' };
const CONNECTOR_ORDER = ['1024', '999'];

/** "published v2 · API, Web SDK" for a published bot, "draft" for one never published. */
export function publishLabel(bot: IBot): string {
  const connectors = Object.entries(bot.connectors ?? {});
  if (!connectors.length) {
    return 'draft';
  }
  const newest = Math.max(...connectors.map(([, version]) => Number(version) || 0));
  const order = CONNECTOR_ORDER; // API first
  const rank = (id: string): number => (order.includes(id) ? order.indexOf(id) : order.length);
  const where = connectors
    .map(([id]) => id)
    .sort((a, b) => rank(a) - rank(b))
    .map(id => CONNECTOR_NAMES[id] ?? id)
    .join(', ');
  return `published v${newest} · ${where}`;
}

function publishState(bot: IBot): HTMLElement {
  const published = Object.keys(bot.connectors ?? {}).length > 0;
  return h(
    'span',
    {
      class: `jp-CozeLab-pill ${published ? 'jp-mod-succeeded' : ''}`,
      testid: 'coze-lab-bot-state',
      dataset: { published: published ? 'true' : 'false' }
    },
    publishLabel(bot)
  );
}

/**
 * Bots section: list, create, edit prompt / model / variables, publish to the
 * API and Web SDK connectors, and a chat with the selected bot's draft
 * (Playground), streamed from `POST coze_lab/api/bots/{id}/chat`.
 */
export class BotsPanel extends Widget implements ICozeLabPanel {
  /** `openTab` shows a widget in the main area (a conversation's timeline, roomier). */
  constructor(options: { openTab?: (widget: Widget) => void } = {}) {
    super();
    this._openTab = options.openTab ?? null;
    this.id = 'coze-lab-bots';
    this.addClass('jp-CozeLab-panel');
    // A larger share of the sidebar's height than the small sections get.
    SplitPanel.setStretch(this, 2);
    this.title.label = 'Bots & chat';
    this._error = errorBox('coze-lab-bots-error');
    this._list = h('ul', { class: 'jp-CozeLab-list', testid: 'coze-lab-bot-list' });
    this._editor = h('div', { class: 'jp-CozeLab-editor' });
    this._chat = h('div', { class: 'jp-CozeLab-chat', testid: 'coze-lab-chat' });
    this._variables = h('div', { class: 'jp-CozeLab-editor', testid: 'coze-lab-variables' });
    const create = h(
      'button',
      { class: 'jp-CozeLab-button', testid: 'coze-lab-bot-new', onclick: () => this._edit(null) },
      'New bot'
    );
    this.node.append(this._error, create, this._list, this._editor, this._variables, this._chat);
  }

  async refresh(): Promise<void> {
    try {
      const data = await requestAPI<{ bots: IBot[] }>(inSpace('bots'));
      this._bots = data.bots;
      this._renderList();
      showError(this._error, null);
      if (!this._selected) {
        // after a page reload: back to the chat that was open (re-attached if it runs)
        const open = rememberedChat();
        const bot = open && this._bots.find(b => b.bot_id === open.bot_id);
        if (bot && open) {
          this._openChat(bot, open.conversation_id);
        }
      }
    } catch (error) {
      showError(this._error, error);
    }
  }

  private _renderList(): void {
    this._list.replaceChildren(
      ...this._bots.map(bot =>
        h(
          'li',
          {
            class: bot.bot_id === this._selected ? 'jp-mod-selected' : '',
            dataset: { botId: bot.bot_id, testid: 'coze-lab-bot' }
          },
          h('span', { class: 'jp-CozeLab-strong' }, bot.name),
          publishState(bot),
          h(
            'button',
            { class: 'jp-CozeLab-link', onclick: () => this._edit(bot) },
            'Edit'
          ),
          h(
            'button',
            {
              class: 'jp-CozeLab-link',
              testid: 'coze-lab-bot-variables',
              title: 'Your values of the bot\'s variables (Playground)',
              onclick: () => void this._openVariables(bot)
            },
            'Variables'
          ),
          h(
            'button',
            {
              class: 'jp-CozeLab-link',
              testid: 'coze-lab-bot-chat',
              onclick: () => this._openChat(bot)
            },
            'Chat'
          )
        )
      )
    );
  }

  private _edit(bot: IBot | null): void {
    const name = h('input', { value: bot?.name ?? '', testid: 'coze-lab-bot-name' });
    const prompt = h('textarea', { rows: '4', testid: 'coze-lab-bot-prompt' });
    prompt.value = bot?.prompt_info.prompt ?? '';
    const model = h('input', {
      value: bot?.model_info.model_id ?? 'default',
      testid: 'coze-lab-bot-model'
    });
    const variables = h('textarea', {
      rows: '2',
      placeholder: 'name=default (one per line)',
      testid: 'coze-lab-bot-variables'
    });
    variables.value = variablesText(bot);
    const status = h('div', { class: 'jp-CozeLab-detail', testid: 'coze-lab-bot-status' });
    const save = async (): Promise<IBot | null> => {
      const body = {
        name: name.value.trim(),
        prompt_info: { prompt: prompt.value },
        model_info_config: { model_id: model.value.trim() || 'default' },
        variables: parseVariables(variables.value, bot?.variables)
      };
      try {
        const saved = bot
          ? await requestAPI<IBot>(`bots/${bot.bot_id}`, {
              method: 'PUT',
              body: JSON.stringify(body)
            })
          : await requestAPI<IBot>(inSpace('bots'), {
              method: 'POST',
              body: JSON.stringify(body)
            });
        bot = saved;
        status.textContent = `Saved ${saved.name}`;
        showError(this._error, null);
        await this.refresh();
        return saved;
      } catch (error) {
        showError(this._error, error);
        return null;
      }
    };
    const publish = async (): Promise<void> => {
      const saved = await save();
      if (!saved) {
        return;
      }
      try {
        await requestAPI(`bots/${saved.bot_id}/publish`, {
          method: 'POST',
          body: JSON.stringify({ connector_ids: ['1024', '999'] })
        });
        status.textContent = `Published ${saved.name} to the API and the Web SDK`;
        await this.refresh();
      } catch (error) {
        showError(this._error, error);
      }
    };
    this._editor.replaceChildren(
      h('div', { class: 'jp-CozeLab-subhead' }, bot ? `Edit ${bot.name}` : 'New bot'),
      h('label', {}, 'Name', name),
      h('label', {}, 'Prompt', prompt),
      h('label', {}, 'Model', model),
      h('label', {}, 'Variables', variables),
      h(
        'div',
        {},
        h(
          'button',
          { class: 'jp-CozeLab-button', testid: 'coze-lab-bot-save', onclick: () => void save() },
          'Save'
        ),
        h(
          'button',
          {
            class: 'jp-CozeLab-button',
            testid: 'coze-lab-bot-publish',
            onclick: () => void publish()
          },
          'Publish'
        ),
        h(
          'button',
          { class: 'jp-CozeLab-link', onclick: () => this._editor.replaceChildren() },
          'Close'
        )
      ),
      status
    );
  }

  /**
   * The bot's variables with your values on the Playground (what your chats with the
   * draft use), editable where the end user may set them.
   */
  private async _openVariables(bot: IBot): Promise<void> {
    const path = `bots/${bot.bot_id}/variables`;
    const status = h('div', { class: 'jp-CozeLab-detail', testid: 'coze-lab-variables-status' });
    const rows = h('div', { testid: 'coze-lab-variable-rows' });
    const inputs = new Map<string, { input: HTMLInputElement; value: string }>();
    const render = (items: IVariableState[]): void => {
      inputs.clear();
      rows.replaceChildren(
        ...items.map(v => {
          const input = h('input', {
            value: v.value,
            testid: 'coze-lab-variable-value',
            dataset: { keyword: v.keyword },
            title: v.user_can_set === false ? 'read-only: the end user may not set it' : ''
          });
          input.disabled = v.user_can_set === false;
          inputs.set(v.keyword, { input, value: v.value });
          const notes = [
            v.description,
            v.update_time ? '' : 'default',
            v.user_can_set === false ? 'read-only' : '',
            v.agent_can_set === false ? 'the bot may not set it' : ''
          ].filter(Boolean);
          return h(
            'label',
            { dataset: { keyword: v.keyword, testid: 'coze-lab-variable' } },
            v.keyword,
            input,
            notes.length ? h('span', { class: 'jp-CozeLab-detail' }, notes.join(' · ')) : null
          );
        })
      );
      if (!items.length) {
        rows.append(h('div', { class: 'jp-CozeLab-detail' }, 'This bot has no variables.'));
      }
    };
    const save = async (): Promise<void> => {
      const data = [...inputs.entries()]
        .filter(([, { input, value }]) => !input.disabled && input.value !== value)
        .map(([keyword, { input }]) => ({ keyword, value: input.value }));
      if (!data.length) {
        status.textContent = 'Nothing changed';
        return;
      }
      try {
        const saved = await requestAPI<{ variables: IVariableState[] }>(path, {
          method: 'PUT',
          body: JSON.stringify({ data })
        });
        render(saved.variables);
        status.textContent = `Saved ${data.map(d => d.keyword).join(', ')}`;
        showError(this._error, null);
      } catch (error) {
        showError(this._error, error);
      }
    };
    this._variables.replaceChildren(
      h('div', { class: 'jp-CozeLab-subhead' }, `Variables of ${bot.name} (yours, Playground)`),
      rows,
      h(
        'div',
        {},
        h(
          'button',
          { class: 'jp-CozeLab-button', testid: 'coze-lab-variables-save', onclick: () => void save() },
          'Save values'
        ),
        h(
          'button',
          { class: 'jp-CozeLab-link', onclick: () => this._variables.replaceChildren() },
          'Close'
        )
      ),
      status
    );
    try {
      render((await requestAPI<{ variables: IVariableState[] }>(path)).variables);
      showError(this._error, null);
    } catch (error) {
      showError(this._error, error);
    }
  }

  private _openChat(bot: IBot, conversationId = ''): void {
    this._selected = bot.bot_id;
    this._conversation = conversationId;
    this._chatId = '';
    this._renderList();
    rememberChat(bot.bot_id, conversationId);
    const log = h('div', { class: 'jp-CozeLab-chatlog', testid: 'coze-lab-chat-log' });
    const state = h('span', { class: 'jp-CozeLab-chatstate' });
    const activity = h('div', { class: 'jp-CozeLab-activity', testid: 'coze-lab-activity' });
    const showActivity = h(
      'button',
      { class: 'jp-CozeLab-link', testid: 'coze-lab-activity-toggle', title: 'Activity timeline' },
      'Activity'
    );
    const openTab = h(
      'button',
      {
        class: 'jp-CozeLab-link',
        testid: 'coze-lab-activity-open',
        title: 'The timeline in a tab of the main area'
      },
      'Open in a tab'
    );
    openTab.hidden = !this._openTab;
    let conversations: IConversation[] = [];
    const picker = h(
      'select',
      { testid: 'coze-lab-chat-conversations', title: 'Conversation' },
      h('option', { value: '' }, 'New conversation')
    );
    const fresh = h(
      'button',
      { class: 'jp-CozeLab-link', testid: 'coze-lab-chat-new', title: 'Start a new conversation' },
      'New conversation'
    );
    const input = h('textarea', {
      rows: '2',
      placeholder: `Message ${bot.name}`,
      testid: 'coze-lab-chat-input'
    });
    const send = h('button', { class: 'jp-CozeLab-button', testid: 'coze-lab-chat-send' }, 'Send');
    const cancel = h('button', { class: 'jp-CozeLab-link' }, 'Cancel');
    const clear = h('button', { class: 'jp-CozeLab-link', testid: 'coze-lab-chat-clear' }, 'Clear context');
    cancel.disabled = true;
    const isCurrent = (): boolean => this._selected === bot.bot_id && this._chat.contains(log);

    /** Fill the picker with the bot's conversations (newest first), keeping the selection. */
    const loadConversations = async (): Promise<void> => {
      try {
        const data = await requestAPI<{ conversations: IConversation[] }>(
          `bots/${bot.bot_id}/conversations?page_size=50`
        );
        if (!isCurrent()) {
          return;
        }
        conversations = data.conversations;
        const current = conversations.find(c => c.id === this._conversation);
        state.replaceChildren(current?.state ? statePill(current.state) : '');
        picker.replaceChildren(
          h('option', { value: '' }, 'New conversation'),
          ...data.conversations.map(c =>
            h(
              'option',
              { value: c.id, dataset: { conversationId: c.id, state: c.state ?? '' } },
              conversationLabel(c)
            )
          )
        );
        picker.value = this._conversation;
      } catch (error) {
        showError(this._error, error);
      }
    };

    /** Load a conversation's whole history, oldest first, page by page (`after_id`). */
    const loadHistory = async (conversationId: string): Promise<void> => {
      log.replaceChildren(h('div', { class: 'jp-CozeLab-detail' }, 'Loading…'));
      log.dataset.loaded = '';
      const messages: IMessage[] = [];
      let after = '';
      try {
        for (let page = 0; page < HISTORY_PAGES; page++) {
          const query = `limit=${HISTORY_PAGE}${after ? `&after_id=${after}` : ''}`;
          const data = await requestAPI<{ messages: IMessage[]; last_id: string; has_more: boolean }>(
            `conversations/${conversationId}/messages?${query}`
          );
          messages.push(...data.messages);
          const last = data.last_id || data.messages[data.messages.length - 1]?.id || '';
          if (!data.has_more || !last || last === after) {
            break;
          }
          after = last;
        }
      } catch (error) {
        showError(this._error, error);
      }
      if (this._conversation !== conversationId || !isCurrent()) {
        return; // another conversation was picked meanwhile
      }
      log.replaceChildren();
      let section = '';
      for (const message of messages) {
        if (section && message.section_id !== section) {
          log.append(h('div', { class: 'jp-CozeLab-divider' }, '— context cleared —'));
        }
        section = message.section_id;
        if (message.role === 'user') {
          log.append(
            h('div', { class: 'jp-CozeLab-msg jp-mod-user', testid: 'coze-lab-chat-question' }, message.content)
          );
        } else if (message.role === 'assistant' && message.type !== 'verbose' && message.type !== 'follow_up') {
          const node = this._messageNode(message.type);
          node.dataset.messageId = message.id;
          this._fill(node, message.type, message.content);
          log.append(node);
        }
      }
      if (!messages.length) {
        log.append(h('div', { class: 'jp-CozeLab-detail' }, 'no messages yet'));
      }
      log.dataset.loaded = conversationId;
      log.scrollTop = log.scrollHeight;
    };

    const go = async (): Promise<void> => {
      const text = input.value.trim();
      if (!text) {
        return;
      }
      input.value = '';
      send.disabled = true;
      cancel.disabled = false;
      picker.disabled = true;
      fresh.disabled = true;
      log.querySelectorAll(':scope > .jp-CozeLab-detail').forEach(n => n.remove());
      log.append(h('div', { class: 'jp-CozeLab-msg jp-mod-user', testid: 'coze-lab-chat-question' }, text));
      const answers = new Map<string, HTMLElement>();
      const body: Record<string, unknown> = { message: text, stream: true };
      if (this._conversation) {
        body.conversation_id = this._conversation;
      }
      try {
        for await (const event of streamAPI(`bots/${bot.bot_id}/chat`, {
          method: 'POST',
          body: JSON.stringify(body)
        })) {
          handle(event.event, event.data ?? {}, answers);
          if (this._conversation && rememberedChat()?.conversation_id !== this._conversation) {
            rememberChat(bot.bot_id, this._conversation); // a reload comes back to it
          }
        }
      } catch (error) {
        showError(this._error, error);
      } finally {
        busy(false);
      }
      await loadConversations(); // a new conversation is listed and selected; states change
      await loadActivity();
    };

    const busy = (running: boolean): void => {
      send.disabled = running;
      cancel.disabled = !running;
      picker.disabled = running;
      fresh.disabled = running;
    };

    /** One chat event into the log (a sent message's stream, or a re-attached one). */
    const handle = (name: string, data: any, answers: Map<string, HTMLElement>): void => {
      if (name.startsWith('conversation.chat.')) {
        this._conversation = data.conversation_id || this._conversation;
        this._chatId = data.id || this._chatId;
        if (name === 'conversation.chat.failed') {
          showError(this._error, data.last_error?.msg || 'the chat failed');
        }
      } else if (
        name === 'conversation.message.delta' ||
        name === 'conversation.message.completed'
      ) {
        if (data.role !== 'assistant' || data.type === 'verbose') {
          return;
        }
        let node = answers.get(data.id);
        if (!node) {
          const shown = log.querySelector(`[data-message-id="${data.id}"]`) as HTMLElement | null;
          node = shown ?? this._messageNode(data.type);
          node.dataset.raw = ''; // a replay starts the message over
          node.dataset.messageId = data.id;
          answers.set(data.id, node);
          if (!shown) {
            log.append(node);
          }
        }
        const full = name.endsWith('completed')
          ? data.content
          : (node.dataset.raw ?? '') + data.content;
        node.dataset.raw = full;
        this._fill(node, data.type, full);
        log.scrollTop = log.scrollHeight;
      } else if (name === 'error') {
        showError(this._error, data.msg || 'error');
      }
    };

    /** Follow a chat that is still running (after a page reload): its events from the
     * first on, picking up after the last one seen (Last-Event-ID) when the stream breaks. */
    const attach = async (chatId: string): Promise<void> => {
      const conversationId = this._conversation;
      this._chatId = chatId;
      busy(true);
      log.dataset.attached = 'running';
      const answers = new Map<string, HTMLElement>();
      let last = '';
      let finished = false;
      try {
        for (let attempt = 0; attempt < REATTACH_TRIES && !finished; attempt++) {
          const headers: Record<string, string> = last ? { 'Last-Event-ID': last } : {};
          try {
            for await (const event of streamAPI(
              `chats/${chatId}/events?conversation_id=${conversationId}`,
              { headers }
            )) {
              last = event.id || last;
              if (event.event === 'done') {
                break;
              }
              handle(event.event, event.data ?? {}, answers);
            }
            finished = true; // the stream ended: the chat is over
          } catch (error) {
            if (attempt === REATTACH_TRIES - 1) {
              showError(this._error, error);
            }
          }
        }
      } finally {
        busy(false);
      }
      if (this._conversation !== conversationId || !isCurrent()) {
        return;
      }
      await loadConversations();
      await loadActivity();
      log.dataset.attached = 'finished';
    };

    /** The open conversation's timeline (shown when the Activity toggle is on). */
    const loadActivity = async (): Promise<void> => {
      const conversationId = this._conversation;
      if (!conversationId || !activity.dataset.open) {
        activity.replaceChildren();
        return;
      }
      try {
        const data = await requestAPI<IActivity>(`conversations/${conversationId}/activity`);
        if (this._conversation === conversationId && isCurrent()) {
          activity.replaceChildren(renderTimeline(data));
        }
        const tab = this._tabs.get(conversationId);
        if (tab && !tab.isDisposed) {
          tab.render(data);
        }
      } catch (error) {
        showError(this._error, error);
      }
    };
    openTab.onclick = () => {
      const conversationId = this._conversation;
      if (!conversationId || !this._openTab) {
        return;
      }
      let tab = this._tabs.get(conversationId);
      if (!tab || tab.isDisposed) {
        const label = conversations.find(c => c.id === conversationId);
        tab = new ActivityTab(
          conversationId,
          `${bot.name} · ${label?.name || '#' + conversationId.slice(-6)}`
        );
        this._tabs.set(conversationId, tab);
      }
      this._openTab(tab);
      void tab.refresh();
    };
    showActivity.onclick = () => {
      activity.dataset.open = activity.dataset.open ? '' : 'true';
      showActivity.classList.toggle('jp-mod-active', Boolean(activity.dataset.open));
      void loadActivity();
    };
    send.onclick = () => void go();
    input.onkeydown = (e: KeyboardEvent) => {
      if (e.key === 'Enter' && !e.shiftKey) {
        e.preventDefault();
        void go();
      }
    };
    cancel.onclick = () => {
      if (this._chatId) {
        void requestAPI(`chats/${this._chatId}/cancel`, {
          method: 'POST',
          body: JSON.stringify({ conversation_id: this._conversation })
        }).catch(error => showError(this._error, error));
      }
    };
    clear.onclick = async () => {
      if (this._conversation) {
        try {
          await requestAPI(`conversations/${this._conversation}/clear`, { method: 'POST' });
        } catch (error) {
          showError(this._error, error);
          return;
        }
      }
      log.append(h('div', { class: 'jp-CozeLab-divider' }, '— context cleared —'));
      log.scrollTop = log.scrollHeight;
    };
    const startNew = (): void => {
      this._conversation = '';
      this._chatId = '';
      picker.value = '';
      log.replaceChildren();
      log.dataset.loaded = '';
      state.replaceChildren();
      activity.replaceChildren();
      rememberChat(bot.bot_id, '');
      showError(this._error, null);
      input.focus();
    };
    fresh.onclick = startNew;
    picker.onchange = () => {
      if (!picker.value) {
        startNew();
        return;
      }
      this._conversation = picker.value;
      this._chatId = '';
      rememberChat(bot.bot_id, picker.value);
      showError(this._error, null);
      void open(picker.value);
    };

    /** Show a conversation: its history, its state and timeline, and its running chat. */
    const open = async (conversationId: string): Promise<void> => {
      await loadHistory(conversationId);
      await loadConversations();
      await loadActivity();
      const current = conversations.find(c => c.id === conversationId);
      if (current?.state === 'running' && current.chat_id && this._conversation === conversationId) {
        await attach(current.chat_id);
      }
    };
    this._chat.replaceChildren(
      h('div', { class: 'jp-CozeLab-subhead' }, `Chat with ${bot.name} (draft)`),
      h('div', { class: 'jp-CozeLab-row' }, picker, fresh),
      h('div', { class: 'jp-CozeLab-row' }, state, showActivity, openTab),
      log,
      input,
      h('div', {}, send, cancel, clear),
      activity
    );
    if (conversationId) {
      void open(conversationId);
    } else {
      void loadConversations();
    }
    input.focus();
  }

  private _messageNode(type: string): HTMLElement {
    if (type === 'function_call' || type === 'tool_response' || type === 'tool_output') {
      return h(
        'details',
        { class: 'jp-CozeLab-tool', testid: 'coze-lab-chat-tool' },
        h('summary', {}, type === 'function_call' ? 'Tool call' : 'Tool result'),
        h('pre', {})
      );
    }
    return h('div', { class: 'jp-CozeLab-msg jp-mod-assistant', testid: 'coze-lab-chat-answer' });
  }

  private _fill(node: HTMLElement, type: string, text: string): void {
    if (node.tagName === 'DETAILS') {
      (node.querySelector('pre') as HTMLElement).textContent = text;
    } else if (type === 'answer') {
      node.innerHTML = markdown(text);
    } else {
      node.textContent = text;
    }
  }

  private _openTab: ((widget: Widget) => void) | null;
  private _tabs = new Map<string, ActivityTab>();
  private _bots: IBot[] = [];
  private _selected = '';
  private _conversation = '';
  private _chatId = '';
  private _error: HTMLDivElement;
  private _list: HTMLUListElement;
  private _editor: HTMLDivElement;
  private _chat: HTMLDivElement;
  private _variables: HTMLDivElement;
}

/** A conversation's timeline in a main-area tab (refreshed as its chats go on). */
class ActivityTab extends Widget {
  constructor(conversationId: string, label: string) {
    super();
    this._conversationId = conversationId;
    this.id = `coze-lab-activity-${conversationId}`;
    this.addClass('jp-CozeLab-activity-tab');
    this.node.dataset.testid = 'coze-lab-activity-tab';
    this.title.label = `Activity · ${label}`;
    this.title.closable = true;
    this._error = errorBox('coze-lab-activity-tab-error');
    this._body = h('div', {});
    const refresh = h(
      'button',
      { class: 'jp-CozeLab-link', onclick: () => void this.refresh() },
      'Refresh'
    );
    this.node.append(
      h(
        'div',
        { class: 'jp-CozeLab-activity-page', testid: 'coze-lab-activity-page' },
        h('div', { class: 'jp-CozeLab-subhead' }, `Activity of ${label}`, refresh),
        this._error,
        this._body
      )
    );
  }

  async refresh(): Promise<void> {
    try {
      this.render(await requestAPI<IActivity>(`conversations/${this._conversationId}/activity`));
      showError(this._error, null);
    } catch (error) {
      showError(this._error, error);
    }
  }

  render(activity: IActivity): void {
    this._body.replaceChildren(renderTimeline(activity));
  }

  private _conversationId: string;
  private _error: HTMLDivElement;
  private _body: HTMLDivElement;
}
