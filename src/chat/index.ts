/**
 * Chat mode's pure domain (issue 38): Hugging Face chat templates rendered as transformers renders
 * them, model turns read as vLLM's hermes/qwen3 parsers read them, and conversations kept as the
 * exact ids the engine saw. docs/chat.md describes the API and its decisions.
 */
export type { AssistantMessage, ChatMessage, ToolCall, ToolSpec } from './messages';
export { asVllmRenders, asVllmTools } from './messages';
export { envDeltaText, trailingTurnText, type RenderChat } from './env-delta';
export { ChatTemplate, ChatTemplateError, type ChatTemplateErrorKind, type RenderOptions, type TokenizerConfig } from './template';
export { formatHermesToolCalls, parseModelTurn, splitReasoning, type ParsedToolCall, type ParsedTurn, type ParseOptions, type ToolCallProblem, type ToolCallProblemKind } from './hermes';
export { ConversationError, TokenConversation, loadChatModel, type ChatModel, type ConversationOptions, type IdSpan, type TokenConversationSnapshot } from './token-conversation';
export { checkConversation, MISMATCH_KINDS, type ConversationCheck, type Mismatch, type MismatchKind } from './conversation-check';
export { PyJsonError, pyJsonDumps, pyJsonLoads } from './py-json';
