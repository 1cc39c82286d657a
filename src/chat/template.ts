/**
 * A Hugging Face model directory's chat template (tokenizer_config.json's `chat_template`), rendered
 * with @huggingface/jinja so the text equals transformers' `apply_chat_template(..., tokenize=False)`
 * byte for byte: the same template choice (a named list picks `tool_use` when tools are given), the
 * same variables (the special tokens, then the caller's kwargs) and the messages as given.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Template } from '@huggingface/jinja';
import { tokenContent } from '../model/tokenizer';
import { compileTemplate, PYTHON_GLOBALS } from './jinja-python';
import type { ChatMessage, ToolSpec } from './messages';

export type ChatTemplateErrorKind = 'no-template' | 'unknown-template-name' | 'parse' | 'render' | 'no-tool-support';

export class ChatTemplateError extends Error {
  constructor(
    readonly kind: ChatTemplateErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}

export interface RenderOptions {
  tools?: readonly ToolSpec[];
  addGenerationPrompt?: boolean;
  /** Qwen3's switch; left out, the template sees it undefined (Qwen3 then thinks). */
  enableThinking?: boolean;
  /** Further template variables (transformers' **kwargs), after the special tokens. */
  kwargs?: Record<string, unknown>;
}

/** The parts of tokenizer_config.json a template reads. */
export interface TokenizerConfig {
  chat_template?: string | { name: string; template: string }[];
  bos_token?: unknown;
  eos_token?: unknown;
  pad_token?: unknown;
  unk_token?: unknown;
}

const SPECIAL_TOKEN_KEYS = ['bos_token', 'eos_token', 'unk_token', 'pad_token'] as const;
const PROBE_TOOL: ToolSpec = { type: 'function', function: { name: 'probe_tool_x7', description: 'probe', parameters: { type: 'object', properties: {} } } };

export class ChatTemplate {
  /** The special tokens transformers passes to every render (special_tokens_map). */
  readonly specialTokens: Record<string, string>;
  /**
   * Whether the template writes `tools` and assistant `tool_calls` at all, found by rendering a probe
   * with and without them: a template that ignores them (plain ChatML) would silently drop them.
   */
  readonly rendersTools: boolean;
  readonly rendersToolCalls: boolean;
  private readonly templates: ReadonlyMap<string, Template>;

  constructor(
    readonly config: TokenizerConfig,
    private readonly name?: string,
  ) {
    this.specialTokens = specialTokensOf(config);
    const raw = config.chat_template;
    if (raw === undefined || raw === null) throw new ChatTemplateError('no-template', 'tokenizer_config.json has no chat_template');
    const sources = typeof raw === 'string' ? new Map([['default', raw]]) : new Map(raw.map((t) => [t.name, t.template]));
    if (name !== undefined && !sources.has(name)) throw new ChatTemplateError('unknown-template-name', `no chat template named ${JSON.stringify(name)} (have ${[...sources.keys()].join(', ')})`);
    const compiled = new Map<string, Template>();
    for (const [n, source] of sources) {
      try {
        compiled.set(n, compileTemplate(source));
      } catch (err) {
        throw new ChatTemplateError('parse', `chat template ${JSON.stringify(n)} does not parse: ${(err as Error).message}`);
      }
    }
    this.templates = compiled;
    const user: ChatMessage[] = [{ role: 'user', content: 'probe' }];
    this.rendersTools = this.differs(user, { tools: [PROBE_TOOL] }, user, {});
    const call = { type: 'function' as const, function: { name: PROBE_TOOL.function.name, arguments: '{}' } };
    this.rendersToolCalls = this.differs([...user, { role: 'assistant', content: 'a', tool_calls: [call] }], {}, [...user, { role: 'assistant', content: 'a' }], {});
  }

  /** Whether two probe renders differ; a template that raises on a probe is taken not to support it. */
  private differs(a: readonly ChatMessage[], aOpts: RenderOptions, b: readonly ChatMessage[], bOpts: RenderOptions): boolean {
    try {
      return this.renderRaw(a, aOpts) !== this.renderRaw(b, bOpts);
    } catch (err) {
      if (err instanceof ChatTemplateError) return false;
      throw err;
    }
  }

  /** From a model directory holding tokenizer_config.json. */
  static fromDir(dir: string, name?: string): ChatTemplate {
    return new ChatTemplate(JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8')) as TokenizerConfig, name);
  }

  /**
   * The conversation's text. Refuses (ChatTemplateError 'no-tool-support') tools or assistant tool
   * calls that this template would not write, rather than dropping them.
   */
  render(messages: readonly ChatMessage[], opts: RenderOptions = {}): string {
    if ((opts.tools?.length ?? 0) > 0 && !this.rendersTools) {
      throw new ChatTemplateError('no-tool-support', 'this chat template does not render tools: given tools would be silently left out of the prompt');
    }
    const i = messages.findIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
    if (i >= 0 && !this.rendersToolCalls) {
      throw new ChatTemplateError('no-tool-support', `this chat template does not render assistant tool_calls: messages[${i}]'s would be silently left out`);
    }
    return this.renderRaw(messages, opts);
  }

  private renderRaw(messages: readonly ChatMessage[], opts: RenderOptions): string {
    const template = this.pick(opts.tools !== undefined);
    const vars: Record<string, unknown> = {
      ...PYTHON_GLOBALS,
      ...this.specialTokens,
      ...(opts.enableThinking === undefined ? {} : { enable_thinking: opts.enableThinking }),
      ...opts.kwargs,
      messages,
      tools: opts.tools ?? null,
      documents: null,
      add_generation_prompt: opts.addGenerationPrompt ?? false,
    };
    try {
      return template.render(vars); // raise_exception is the library's own
    } catch (err) {
      throw new ChatTemplateError('render', `chat template failed: ${(err as Error).message}`);
    }
  }

  /** transformers' get_chat_template: the named one, else `tool_use` when tools are given, else `default`. */
  private pick(withTools: boolean): Template {
    const t = this.name !== undefined ? this.templates.get(this.name) : ((withTools ? this.templates.get('tool_use') : undefined) ?? this.templates.get('default'));
    if (t === undefined) throw new ChatTemplateError('unknown-template-name', `no default chat template among ${[...this.templates.keys()].join(', ')}; name one`);
    return t;
  }
}

function specialTokensOf(config: TokenizerConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of SPECIAL_TOKEN_KEYS) {
    const text = tokenContent(config[key]);
    if (text !== undefined) out[key] = text;
  }
  return out;
}
