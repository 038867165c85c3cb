/**
 * svc:ua_parser: user agent → { device: { family, type }, browser: { family, major, minor, patch },
 * os: { family, major, minor, patch, patch_minor } }. Families and versions come from uap-core's
 * rules; device.type from ua-parser-js 1.x ('mobile', 'tablet', 'console', 'smarttv', 'wearable',
 * 'embedded', 'xr'), or 'desktop' when it names none but knows the browser and a desktop OS.
 * Results are cached in a bounded LRU keyed by the (length-capped) user agent.
 *
 * Null semantics: versions are numbers (leading digits of the version text, so '1pre' → 1) or null.
 * A value that is not a non-empty string is an invalid user agent: families and versions are null
 * and `device.type` is absent, as the seed says. An unrecognised non-empty string gives family
 * 'Other' (uap-core's convention) and no `device.type`.
 */
import UAParser from 'ua-parser-js';
import { UA_CACHE_ENTRIES_MAX, UA_CHARS_MAX } from '../../base/limits.js';
import { LruCache } from '../lru.js';
import type { Addon } from './addon.js';
import { matchRules, type UapRules } from './uap-rules.js';

interface ParsedAgent {
  readonly deviceFamily: string;
  readonly deviceType: string | undefined;
  readonly browser: readonly [string, ...(number | null)[]];
  readonly os: readonly [string, ...(number | null)[]];
}

/** OS names of ua-parser-js that mean a desktop or laptop when it reports no device type. */
const DESKTOP_OS = new RegExp(
  '^(Windows(?! Phone| Mobile| CE)|Mac OS|macOS|Linux|Ubuntu|Debian|Fedora|Chrom(e|ium) OS|' +
    'FreeBSD|OpenBSD|NetBSD|Solaris|SunOS|Mint|Arch|Gentoo|Red Hat|SUSE|openSUSE|CentOS|' +
    'Slackware|Mandriva|Manjaro|Kubuntu|Xubuntu|Lubuntu|elementary OS|Deepin|Haiku|Unix)',
);

export function createUaParser(rules: UapRules, cacheEntriesMax = UA_CACHE_ENTRIES_MAX): Addon {
  const cache = new LruCache<string, ParsedAgent>(cacheEntriesMax);
  const detector = new UAParser();
  return {
    inputKeys: ['ua_string'],
    compute(values) {
      const value = values[0];
      if (typeof value !== 'string' || value.trim().length === 0) return invalidOutput();
      const ua = value.length > UA_CHARS_MAX ? value.slice(0, UA_CHARS_MAX) : value;
      let parsed = cache.get(ua);
      if (parsed === undefined) {
        parsed = parseAgent(rules, detector, ua);
        cache.set(ua, parsed);
      }
      return toOutput(parsed);
    },
  };
}

function parseAgent(
  rules: UapRules,
  detector: InstanceType<typeof UAParser>,
  ua: string,
): ParsedAgent {
  const agent = matchRules(rules.agent, ua, 4);
  const os = matchRules(rules.os, ua, 5);
  const device = matchRules(rules.device, ua, 1);
  detector.setUA(ua);
  let deviceType = detector.getDevice().type;
  if (deviceType === undefined && device.family !== 'Spider') {
    const osName = detector.getOS().name;
    const known = detector.getBrowser().name !== undefined && osName !== undefined;
    if (known && DESKTOP_OS.test(osName)) deviceType = 'desktop';
  }
  return {
    deviceFamily: device.family,
    deviceType,
    browser: [agent.family, ...agent.versions.map(versionNumber)],
    os: [os.family, ...os.versions.map(versionNumber)],
  };
}

/** The leading decimal digits of a version part as a number, or null (also past 15 digits). */
function versionNumber(text: string | null): number | null {
  if (text === null) return null;
  const digits = /^\d{1,15}(?!\d)/.exec(text);
  return digits === null ? null : Number(digits[0]);
}

function toOutput(parsed: ParsedAgent): Record<string, unknown> {
  const device: Record<string, unknown> = { family: parsed.deviceFamily };
  if (parsed.deviceType !== undefined) device.type = parsed.deviceType;
  const [browserFamily, major, minor, patch] = parsed.browser;
  const [osFamily, osMajor, osMinor, osPatch, osPatchMinor] = parsed.os;
  return {
    device,
    browser: { family: browserFamily, major, minor, patch },
    os: {
      family: osFamily, major: osMajor, minor: osMinor, patch: osPatch, patch_minor: osPatchMinor,
    },
  };
}

function invalidOutput(): Record<string, unknown> {
  return {
    device: { family: null },
    browser: { family: null, major: null, minor: null, patch: null },
    os: { family: null, major: null, minor: null, patch: null, patch_minor: null },
  };
}
