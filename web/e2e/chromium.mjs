// Chromium's command-line flags for every test that drives it (run.mjs, lab.mjs), DESIGN §6:
// WebRTC needs both of the first two to gather a candidate in a test namespace (and never an
// mDNS name); the rest keep the browser quiet, headless and off the network.
export const CHROMIUM_ARGS = [
  '--allow-loopback-in-peer-connection',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Chromium's flags for the voice scenarios: a fake microphone that plays `wav` (looped) and grants
 * getUserMedia without asking.
 * @param {string} wav
 */
export function voiceArgs(wav) {
  return ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-audio-capture=${wav}`, '--autoplay-policy=no-user-gesture-required'];
}

/**
 * A WAV file (48 kHz, mono, 16 bit) of speech-like sound: syllables of 120–260 ms at changing
 * pitches with short pauses, loud enough to read as speaking (about −12 dBov), and not a steady
 * tone that a noise suppressor would take for noise. seconds long; deterministic.
 * @param {number} seconds
 * @returns {Buffer}
 */
export function speechWav(seconds = 4) {
  const rate = 48000;
  const n = rate * seconds;
  const data = Buffer.alloc(n * 2);
  let i = 0;
  let k = 0;
  while (i < n) {
    const len = Math.floor(rate * (0.12 + ((k * 37) % 15) / 100));
    const pause = Math.floor(rate * (0.03 + ((k * 11) % 5) / 100));
    const f0 = 140 + ((k * 53) % 120);
    for (let j = 0; j < len && i < n; j++, i++) {
      const t = j / rate;
      const env = Math.sin(Math.PI * j / len);
      const v = env * 0.35 * (Math.sin(2 * Math.PI * f0 * t) + 0.5 * Math.sin(2 * Math.PI * 2 * f0 * t) + 0.3 * Math.sin(2 * Math.PI * 3.1 * f0 * t));
      data.writeInt16LE(Math.max(-32767, Math.min(32767, Math.round(v * 32767))), i * 2);
    }
    i += pause;
    k++;
  }
  const h = Buffer.alloc(44);
  h.write('RIFF', 0);
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVE', 8);
  h.write('fmt ', 12);
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36);
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data.subarray(0, n * 2)]);
}
