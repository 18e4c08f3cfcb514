// Which listeners of one Gateway a route attaches to, parentRef by parentRef, as the spec says: a
// sectionName names one listener, a port those on that port, neither all of them; of those, the ones
// that allow the route (served, its kind supported, its namespace admitted by allowedRoutes). A
// parentRef that matches no listener is NoMatchingParent; one whose listeners all refuse the route
// is NotAllowedByListeners.
import { ConditionType, GATEWAY_GROUP, Reason } from '../../api/gateway/names.ts';
import type { Gateway, L4Route, ParentReference } from '../../api/gateway/types.ts';
import { type Verdict, verdict } from './conditions.ts';
import type { JudgedListener } from './listeners.ts';
import { refersToGateway } from './refs.ts';
import { selectorMatches } from './selectors.ts';

export interface Attachment {
  readonly route: L4Route;
  readonly parentRef: ParentReference;
  /** The listeners (by name) this parentRef attaches the route to; empty when not accepted. */
  readonly listeners: readonly string[];
  readonly accepted: Verdict;
}

export interface NamespaceView {
  /** Namespace name → its labels, for allowedRoutes.namespaces.from: Selector. */
  readonly namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

export function attachRoute(
  route: L4Route,
  gateway: Gateway,
  listeners: readonly JudgedListener[],
  view: NamespaceView,
): Attachment[] {
  const routeNamespace = route.metadata.namespace ?? '';
  return (route.spec.parentRefs ?? [])
    .filter((ref) => refersToGateway(ref, routeNamespace, gateway))
    .map((parentRef) => {
      const named = listeners.filter(
        (judged) =>
          (parentRef.sectionName === undefined || judged.listener.name === parentRef.sectionName) &&
          (parentRef.port === undefined || judged.listener.port === parentRef.port),
      );
      if (named.length === 0) {
        return {
          route,
          parentRef,
          listeners: [],
          accepted: verdict(ConditionType.Accepted, false, Reason.NoMatchingParent, noMatchMessage(parentRef, gateway)),
        };
      }
      const allowing = named.filter((judged) => allows(judged, route, gateway, view));
      if (allowing.length === 0) {
        return {
          route,
          parentRef,
          listeners: [],
          accepted: verdict(
            ConditionType.Accepted,
            false,
            Reason.NotAllowedByListeners,
            `no listener of Gateway ${gateway.metadata.name} (${named.map((j) => j.listener.name).join(', ')}) allows a ${route.kind} from namespace ${routeNamespace}`,
          ),
        };
      }
      return {
        route,
        parentRef,
        listeners: allowing.map((judged) => judged.listener.name),
        accepted: verdict(
          ConditionType.Accepted,
          true,
          Reason.Accepted,
          `attached to listener${allowing.length === 1 ? '' : 's'} ${allowing.map((j) => j.listener.name).join(', ')}`,
        ),
      };
    });
}

function allows(judged: JudgedListener, route: L4Route, gateway: Gateway, view: NamespaceView): boolean {
  if (!judged.attachable) return false;
  if (
    !judged.supportedKinds.some((kind) => kind.kind === route.kind && (kind.group ?? GATEWAY_GROUP) === GATEWAY_GROUP)
  )
    return false;
  const routeNamespace = route.metadata.namespace ?? '';
  const from = judged.listener.allowedRoutes?.namespaces?.from ?? 'Same';
  if (from === 'All') return true;
  if (from === 'Same') return routeNamespace === gateway.metadata.namespace;
  const selector = judged.listener.allowedRoutes?.namespaces?.selector;
  return selector !== undefined && selectorMatches(selector, view.namespaceLabels.get(routeNamespace) ?? {});
}

function noMatchMessage(ref: ParentReference, gateway: Gateway): string {
  const wanted = [
    ...(ref.sectionName === undefined ? [] : [`named ${ref.sectionName}`]),
    ...(ref.port === undefined ? [] : [`on port ${ref.port}`]),
  ].join(' ');
  return `Gateway ${gateway.metadata.name} has no listener ${wanted}`;
}
