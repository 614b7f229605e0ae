// What every part of the browser peer shares about its loop: the clock its steps read, and how the
// methods of one object (the Peer, the host role) are spread over the modules of their concepts,
// as the Go package peer spreads a type's methods over files.

/** The loop's clock: milliseconds, monotonic. */
export const now = () => performance.now();

/** Copies the methods of each source class onto target's prototype (constructors excepted). */
export function mixin(target, ...sources) {
  for (const src of sources) {
    for (const name of Object.getOwnPropertyNames(src.prototype)) {
      if (name === 'constructor') continue;
      Object.defineProperty(target.prototype, name, Object.getOwnPropertyDescriptor(src.prototype, name));
    }
  }
}
