/** OpenAI-shaped errors: what a client library turns into its typed exceptions. */
export type GatewayErrorType = 'invalid_request_error' | 'not_found_error' | 'server_error';

export class GatewayError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: GatewayErrorType = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'GatewayError';
  }

  toJSON(): { error: { message: string; type: GatewayErrorType; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}
