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
