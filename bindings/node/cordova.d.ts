// Types of require('<repo>/bindings/node/cordova'): the Cordova bridge over the library's plugin
// dispatcher, and the React Native bridge objects (README.md, "Cordova and React Native bridges").
import { Remote, EncryptionKeyProvider, StoreConfig } from './index';

type ExecSuccess = (value?: any) => void;
type ExecFail = (message: string) => void;

interface CordovaOptions {
  /** Where stores live (default: $SYNCSTORE_ROOT, else the per-user data directory). */
  root?: string;
  /** The default remote of every store: the logged-in user's credentials. */
  remote?: Remote | null;
  /** Per-store remotes. */
  remotes?: Array<{ storeConfig: StoreConfig; remote: Remote }>;
  keyProvider?: EncryptionKeyProvider | null;
  /** Extra members of getAuthCredentials' answer (userId, orgId, ...). */
  credentials?: Record<string, unknown>;
}

interface AuthCredentials {
  accessToken: string; refreshToken: string | null; clientId: string | null; userId: string | null; orgId: string | null;
  loginUrl: string; instanceUrl: string; userAgent: string; communityId: string | null; communityUrl: string | null;
  [key: string]: unknown;
}

/** What events are dispatched on (an EventTarget; a host's DOM document where there is one). */
interface DocumentLike {
  addEventListener(type: string, listener: (event: any) => void, options?: unknown): void;
  removeEventListener(type: string, listener: (event: any) => void, options?: unknown): void;
  dispatchEvent(event: any): boolean;
}

type AndroidMethod = (args: Record<string, unknown>, success?: (json?: string) => void, error?: (message: string) => void) => void;
type IosMethod = (args: Record<string, unknown>, callback: (error: Error | Record<string, unknown> | null, result?: any) => void) => void;

interface ReactNativeBridges {
  SmartStoreReactBridge: Record<string, AndroidMethod>;
  MobileSyncReactBridge: Record<string, AndroidMethod>;
  SFSmartStoreReactBridge: Record<string, IosMethod>;
  SFMobileSyncReactBridge: Record<string, IosMethod>;
  /** RCTDeviceEventEmitter: the native modules' events ("smartstoreChanged", "liveSync", each
   *  payload the Cordova event's detail). */
  DeviceEventEmitter: {
    addListener(type: string, listener: (payload: any) => void): { remove(): void };
    removeAllListeners(type?: string): void;
    listenerCount(type: string): number;
  };
  SalesforceOauthReactBridge: {
    getAuthCredentials(args: unknown, success?: (credentials: AuthCredentials) => void, error?: (message: string) => void): void;
  };
}

/** The part of the dispatcher (lib/plugin.js) a host may call directly. */
interface Plugin {
  readonly root: string;
  readonly freed: boolean;
  exec(service: string, action: string, args: unknown[]): Promise<{ status: number; value: any; hasValue: boolean }>;
  runToEnd(action: 'syncDown' | 'syncUp' | 'reSync', args: unknown[]): Promise<{ status: number; value: any }>;
  setRemote(storeConfig: StoreConfig | null, remote: Remote): void;
  setKeyProvider(fn: EncryptionKeyProvider | null): void;
  free(): Promise<void>;
}

interface Cordova {
  readonly platformId: 'node';
  readonly platformVersion: string;
  readonly version: string;
  exec(success: ExecSuccess | null | undefined, fail: ExecFail | null | undefined, service: string, action: string, args: unknown[]): void;
  define: ((id: string, factory: (require: (id: string) => any, exports: any, module: { id: string; exports: any }) => void) => void) &
    { remove(id: string): boolean };
  require(id: string): any;
  fireDocumentEvent(name: string, data?: Record<string, unknown>): void;
  addDocumentEventListener(type: string, listener: (event: any) => void): void;
  removeDocumentEventListener(type: string, listener: (event: any) => void): void;
  readonly document: DocumentLike;
  configure(options: CordovaOptions): Cordova;
  setRemote(storeConfig: StoreConfig | null, remote: Remote): void;
  setKeyProvider(fn: EncryptionKeyProvider | null): void;
  install(target?: object): Cordova;
  loadScript(file: string): unknown;
  close(): Promise<void>;
  readonly plugin: Plugin;
  readonly reactNative: ReactNativeBridges;
}

declare const cordova: Cordova & { create(options?: CordovaOptions): Cordova };
export = cordova;
