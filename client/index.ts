// The client library's platform-free entry: the HubClient, its transport interface, and the
// protocol types it speaks. Transports live apart so that nothing here pulls in a platform:
// `client/node.js` (TCP, WebSocket over `ws`) and `client/browser.js` (WebSocket, Web Bluetooth).

export {
  ACK_EVERY_FRAMES,
  ACK_INTERVAL_MS,
  BACKOFF_MAX_MS,
  BACKOFF_MIN_MS,
  ClientErrorCode,
  HubClient,
  HubClientError,
  INTENT_TIMEOUT_MS,
  JITTER_RESERVE_MS,
  OWNER_PING_INTERVAL_MS,
  PING_INTERVAL_MS,
  REQUEST_TIMEOUT_MS,
  SILENCE_TIMEOUT_MS,
} from './core.js';
export type {
  ChannelStats,
  ClientCounters,
  ClientErrorCodeName,
  ClientState,
  HubClientHandlers,
  HubClientOptions,
  PublicationStats,
  PublishAnswer,
  Refusal,
  SubscribeAnswer,
} from './core.js';
export { LengthPrefixReassembler, lengthPrefixed, ReassemblyError } from './transport.js';
export type { ClientClock, ClientTransport, RandomSource, TimerHandle, TransportFactory } from './transport.js';

export { FrameType, GoodbyeReason, PROTOCOL_VERSION } from '../hub/frames.js';
export type { Arg, DataFrame, EchoFrame, Frame, GrantFrame, NackFrame, PubGrant, PubWish, SubGrant, SubWish, WelcomeFrame } from '../hub/frames.js';
export { EstopKind, EstopSource } from '../hub/estop-frame.js';
export type { EstopFrame } from '../hub/estop-frame.js';
export { Nack, nackName, isRetryable } from '../hub/nack.js';
export { Priority, Tier } from '../catalog/schema.js';
export type { CatalogIndex, ChannelInfo } from '../catalog/index.js';
