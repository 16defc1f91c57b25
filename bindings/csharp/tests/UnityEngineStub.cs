// The few UnityEngine types the MonoBehaviour example of docs/UNITY.md uses, so that
// run-tests.sh can compile the example without Unity. UnityEngine.Event is here because the
// real one exists and would clash with a type of the same name in the binding.
namespace UnityEngine
{
    public class Event {}
    public struct Vector3 { public float x, y, z; }
    public class Transform { public Vector3 position; }
    public class MonoBehaviour { public Transform transform = new Transform(); }
    public static class Debug
    {
        public static void Log(object message) {}
        public static void LogWarning(object message) {}
    }
}
