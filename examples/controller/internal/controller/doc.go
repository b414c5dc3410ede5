// Package controller holds the example's reconcilers and the wiring that
// adds them to a controller-runtime manager.
//
// [PlatformReconciler] publishes the cluster's Platform through a
// [platform.Publisher]: every reconcile generates the platform module from
// the spec and publishes it under the object's .metadata.generation; a
// deleted Platform is forgotten, and so is an earlier object's platform when
// a new object (a new UID, its generations counting from 1 again) takes its
// place. Its conditions and events say what
// happened. Transient failures (the Publisher not booted yet, a write
// error, a cancelled context) return an error, so the work queue retries
// with exponential backoff; a spec that does not build is not retried, for
// only a new spec can change the result.
//
// [ReleaseReconciler] renders each Release's instance module against the
// platform the Publisher serves, leasing it for the render, and records the
// result in the Release's status. It renders again only when what the
// render reads of the platform changed (its dependencies, the render key's
// [platform.RenderKey] Dependencies): a new generation that leaves them
// costs the Release neither an evaluation nor a write. The status records
// the dependencies and the digest of the verdict's inputs, signed with a
// MAC under the [StatusKey], a Secret only the controller reads; a signed
// status whose inputs still hold is the verdict, kept as it is: no
// replica, restarted, newly elected or handed the Release by a ring,
// evaluates that spec again, and a status that fails its MAC (forged,
// copied, or signed under a key since rotated) is evaluated again.
//
// The store and its directory are per process. By default ([Config]
// WarmStandby) every replica boots its Publisher at start, and a replica
// that is not elected is kept warm by a [Standby]: it follows the Platform
// into its own store and renders every Release into its memo, writing
// nothing; once elected, its reconcilers find the Platform Unchanged and
// the renders in the memo, and only write status. With a cold standby,
// [Setup] registers the Publisher as a runnable that needs leader
// election: only the elected replica boots it, publishes and renders; the
// others keep their platform directory untouched and their store empty
// until they are elected.
//
// With a ring ([Config] Ring, a *shard.Member), the replicas split the
// Releases instead: no leader is elected and no standby kept; every
// replica boots its Publisher and publishes the Platform into its own
// store, renders the Releases of its part of the hash space and writes
// the status of those the ring lets it write for ([Shard]); the replica
// that writes for the Platform's UID writes the Platform's status and
// events. [RingInformer] narrows the manager's Release informer to the
// replica's part.
//
// Reconcilers are safe for concurrent use, as controller-runtime requires.
package controller

// The ClusterRole the reconcilers need, from the rbac markers below, and
// no more: the manager's cache lists and watches both kinds; statuses are
// written with Update (never patched, never read through the status
// subresource); a status write that conflicts reads its Release again past
// the cache (get, through the manager's APIReader), while the Platform's
// is retried from the cache. The leader-election Role, the status key's
// Role (get on its one Secret, create) and the metrics endpoint's rules
// are in config/rbac beside it. The deploy test fails on
// a rule granted here that the controller does not use, and on a request
// the API server refuses.
//go:generate go tool controller-gen rbac:roleName=platform-controller paths=. output:rbac:artifacts:config=../../config/rbac

// +kubebuilder:rbac:groups=examples.leasekit.dev,resources=platforms,verbs=list;watch
// +kubebuilder:rbac:groups=examples.leasekit.dev,resources=releases,verbs=get;list;watch
// +kubebuilder:rbac:groups=examples.leasekit.dev,resources=platforms/status;releases/status,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
