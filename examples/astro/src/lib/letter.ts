import { sanitizeLetter, withoutLeadingTitle } from 'newsletter-bff/sanitize';

/**
 * A letter's HTML as this site shows it inline: sanitised by the kit's own rules (it comes from
 * the newsletter service and is shown on the site's origin), without its first heading when that
 * only repeats the page's title. Used by the content loader (static pages) and by the server
 * build's issue page alike.
 */
export function letterHtml(html: string, subject: string): string {
  return withoutLeadingTitle(sanitizeLetter(html), subject);
}
