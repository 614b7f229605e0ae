// @ts-check
// What every part of the browser peer shares about its loop: the clock its steps read, and how the
// methods of one object (the Peer, the host role) are spread over the modules of their concepts,
// as the Go package peer spreads a type's methods over files.

/** The loop's clock: milliseconds, monotonic. */
export const now = () => performance.now();

/**
 * Copies the methods of each source class onto target's prototype (constructors excepted).
 * @param {Function} target
 * @param {...Function} sources
 */
export function mixin(target, ...sources) {
  for (const src of sources) {
    for (const name of Object.getOwnPropertyNames(src.prototype)) {
      if (name === 'constructor') continue;
      const d = Object.getOwnPropertyDescriptor(src.prototype, name);
      if (d) Object.defineProperty(target.prototype, name, d); // always set: name is an own property
    }
  }
}

/**
 * The base class of a class that mixin() completes: it adds nothing at run time. Its declared
 * type (`@type {new () => A & B}` at the call) tells the type checker that instances carry the
 * mixed-in methods; those methods say what `this` is with `@this`.
 * @returns {new () => any}
 */
export function mixinBase() {
  return class {};
}
